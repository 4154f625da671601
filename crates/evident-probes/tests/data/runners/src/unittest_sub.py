import unittest


class Sub(unittest.TestCase):
    def test_all_pass(self):
        for i in range(3):
            with self.subTest(i=i):
                pass

    def test_two_fail(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertEqual(i, 0)

    def test_sub_skip(self):
        for i in range(2):
            with self.subTest(i=i):
                if i:
                    self.skipTest("odd")

    def test_sub_fail_then_error(self):
        with self.subTest(k="a"):
            self.fail("sub")
        raise ValueError("after")
