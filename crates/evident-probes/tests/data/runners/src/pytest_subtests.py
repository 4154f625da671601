# Only passing subtests: pytest 9's built-in `subtests` fixture, or the pytest-subtests
# plugin's under pytest 8. The "N subtests passed" word of the closing line.
def test_subtests_pass(subtests):
    for i in range(4):
        with subtests.test(i=i):
            assert i >= 0


def test_plain():
    pass
