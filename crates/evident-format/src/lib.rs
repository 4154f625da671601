//! The Completion Claim v0.1 document and the gate contract as Rust types, with strict parsing that names the file, line, column and JSON path of every error. No I/O.
