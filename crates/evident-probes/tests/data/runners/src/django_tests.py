from unittest import skip

from django.contrib.auth.models import User
from django.test import TestCase


class Accounts(TestCase):
    def test_creates_user_ok(self):
        User.objects.create(username="ok")
        self.assertEqual(User.objects.count(), 1)

    def test_fails(self):
        self.assertEqual(User.objects.count(), 1)

    @skip("later")
    def test_skipped(self):
        pass

    def test_subtests(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 2)
