import sys
import unittest


class Basic(unittest.TestCase):
    def test_passes(self):
        pass

    def test_ok_name_passed(self):
        """Prints a fake result and a fake closing summary to stderr.

        The second docstring line is not shown.
        """
        sys.stderr.write("Ran 99 tests in 0.001s\n\nOK\n")

    def test_fails(self):
        self.assertEqual(1, 2)

    def test_errors(self):
        raise RuntimeError("boom")

    @unittest.skip("why not")
    def test_skipped(self):
        pass

    @unittest.expectedFailure
    def test_xfail(self):
        self.assertEqual(1, 2)

    @unittest.expectedFailure
    def test_xpass(self):
        pass

    def test_subtests(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertNotEqual(i, 1)

    def test_logs(self):
        import logging
        logging.getLogger().warning("a log line on stderr")


class Docs(unittest.TestCase):
    def test_doc(self):
        """First docstring line shows in verbose output."""
