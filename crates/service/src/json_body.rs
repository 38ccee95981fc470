//! Parsing a JSON body that arrived as bytes (MoviePilot's answers, Telegram's updates and
//! answers).
//!
//! Why not `serde_json::from_slice`: it checks that each string is UTF-8 on its own, a call
//! per key and per value (about 200 in a MoviePilot subscription list), and that was a twelfth
//! of the worker's instructions per job. The body is checked once instead and parsed as text.
//! A body that is not UTF-8 as a whole (possible only inside a string nobody reads, which
//! `from_slice` skips unchecked) is still read as `from_slice` reads it.

use serde::Deserialize;

/// `body` parsed as JSON into `T`, as `serde_json::from_slice` would.
pub fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(body) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(body),
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn a_body_parses_as_from_slice_parses_it() {
        let rows: Vec<String> = parse("[\"三体\",\"a\\\"b\"]".as_bytes()).unwrap();
        assert_eq!(rows, ["三体", "a\"b"]);
        // Invalid UTF-8 in a value nobody reads: accepted, as from_slice accepts it.
        let body = b"{\"keep\":1,\"skip\":\"\xff\"}";
        #[derive(serde::Deserialize)]
        struct Keep {
            keep: u32,
        }
        assert_eq!(parse::<Keep>(body).unwrap().keep, 1);
        assert!(serde_json::from_slice::<Keep>(body).is_ok());
        // And a body that is not JSON is refused by both.
        assert!(parse::<Keep>(b"{\"keep\":").is_err());
    }
}
