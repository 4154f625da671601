//! The service against a real server on 127.0.0.1, through raw HTTP/1.1 (so a test
//! can send any header or body a hostile client could).

mod attacks;
mod common;
mod gates;
mod limits;
mod routes;
