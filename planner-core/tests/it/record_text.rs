//! The worker's record text round-trips any field text and any number bit for bit.

use planner_core::base::record_text::{escape, record, split, unescape, RECORD};
use proptest::prelude::*;

proptest! {
    #[test]
    fn any_text_round_trips(text in any::<String>()) {
        prop_assert_eq!(unescape(&escape(&text)), text);
    }

    #[test]
    fn records_of_any_fields_round_trip(records in proptest::collection::vec(
        proptest::collection::vec(any::<String>(), 1..5), 1..4)) {
        let message: Vec<String> = records.iter().map(|r| record(r)).collect();
        let back = split(&message.join(&RECORD.to_string()));
        prop_assert_eq!(back, records);
    }

    #[test]
    fn numbers_parse_back_to_the_same_bits(x in any::<f64>()) {
        let back: f64 = format!("{x}").parse().expect("parses");
        prop_assert!(back.to_bits() == x.to_bits() || (back.is_nan() && x.is_nan()));
    }
}
