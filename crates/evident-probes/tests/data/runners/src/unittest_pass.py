import logging
import unittest


class Passing(unittest.TestCase):
    def test_ok(self):
        pass

    def test_ok_named_passed_ok(self):
        """A docstring whose first line ends with ok ... ok

        Only the first line is printed.
        """

    def test_logs_to_stderr(self):
        logging.getLogger().warning("a log line between the header and ok")

    def test_subtests_pass(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertGreaterEqual(i, 0)

    @unittest.skip("not here")
    def test_skip(self):
        pass

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(1, 2)
