use super::number::{c_int, c_long_long, lua_str2number, strtod};

#[test]
fn strtod_reads_what_glibc_reads() {
    let cases: &[(&str, f64, usize)] = &[
        ("1", 1.0, 1),
        ("-2.5e3x", -2500.0, 6),
        ("1.", 1.0, 2),
        ("1e", 1.0, 1),
        ("1e+", 1.0, 1),
        ("0x10", 16.0, 4),
        ("0x", 0.0, 1),
        ("0x1p4", 16.0, 5),
        ("0x.8", 0.5, 4),
        ("+7", 7.0, 2),
        ("007", 7.0, 3),
        ("1e400", f64::INFINITY, 5),
        ("-Infinity", f64::NEG_INFINITY, 9),
        ("infinit", f64::INFINITY, 3),
    ];
    for (text, value, used) in cases {
        assert_eq!(strtod(text.as_bytes()), Some((*value, *used)), "{text}");
    }
    let (nan, used) = strtod(b"nan(12)x").unwrap();
    assert!(nan.is_nan());
    assert_eq!(used, 7);
    assert_eq!(strtod(b"-"), None);
    assert_eq!(strtod(b"."), None);
    assert_eq!(strtod(b"e5"), None);
}

#[test]
fn numbers_convert_to_c_integers_as_x86_does() {
    assert_eq!(c_long_long(1e300), i64::MIN);
    assert_eq!(c_long_long(f64::NAN), i64::MIN);
    assert_eq!(c_long_long(-3.9), -3);
    assert_eq!(c_int(2f64.powi(40)), i32::MIN);
    assert_eq!(c_int(12.0), 12);
}

#[test]
fn lua_reads_numeric_strings_as_lua_does() {
    assert_eq!(lua_str2number(b" 0x10 "), Some(16.0));
    assert_eq!(lua_str2number(b"5"), Some(5.0));
    assert_eq!(lua_str2number(b"5x"), None);
    assert_eq!(lua_str2number(b""), None);
}
