//! Front ends without the TUI: plain text or JSON on stdout, for scripts and tests.

pub mod review;
