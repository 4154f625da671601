import unittest

import pytest


def test_passes():
    assert True


def test_ok_passed_in_name():
    # A name holding "ok" and "passed"; prints a summary-looking line of its own.
    print("==== 99 passed in 0.01s ====")
    assert True


def test_fails():
    assert 1 == 2


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert 0


@pytest.mark.xfail(reason="fixed already")
def test_xpass():
    pass


@pytest.mark.xfail(reason="strict", strict=True)
def test_xpass_strict():
    pass


@pytest.fixture
def broken():
    raise RuntimeError("setup broke")


def test_error(broken):
    pass


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n


def test_subtests(subtests):
    for i in range(3):
        with subtests.test(msg="case", i=i):
            assert i != 1


class TestUnit(unittest.TestCase):
    def test_subtest(self):
        for i in range(2):
            with self.subTest(i=i):
                self.assertEqual(i, 0)
