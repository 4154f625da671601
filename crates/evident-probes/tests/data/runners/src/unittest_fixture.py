import unittest


class Broken(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("class setup broke")

    def test_a(self):
        pass


class SkippedClass(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise unittest.SkipTest("no db")

    def test_b(self):
        pass


class Fine(unittest.TestCase):
    def test_c(self):
        pass
