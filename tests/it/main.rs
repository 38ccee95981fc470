//! Integration tests: one binary, one module per area (other areas add their `mod` line here).

// `oncebot bench`: runs the real binary and checks the shape of its report, never its speed.
mod bench;

// The admission script survives Redis forgetting its scripts (bare EVALSHA + reload).
mod admission_script;
