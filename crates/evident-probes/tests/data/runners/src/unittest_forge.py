import sys
import unittest


class Forge(unittest.TestCase):
    def test_a_fails_after_printing_ok(self):
        # Its header is on the line; the runner's FAIL comes after the forged "ok".
        sys.stderr.write("ok\n")
        self.fail("really failed")

    def test_b_prints_a_result_line(self):
        sys.stderr.write("\ntest_fake (forge.Forge.test_fake) ... ok\n")
