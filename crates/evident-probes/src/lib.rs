//! Witnesses that observe the world now: test runs, endpoints, files, databases, git. An error is never a match.
