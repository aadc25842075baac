use mlua::Lua;

/// Packs with the library and returns the bytes.
fn pack(lua: &Lua, expr: &str) -> Vec<u8> {
    lua.globals()
        .raw_set("cmsgpack", super::module(lua).unwrap())
        .unwrap();
    let s: mlua::LuaString = lua
        .load(format!("return cmsgpack.pack({expr})"))
        .eval()
        .unwrap();
    s.as_bytes().to_vec()
}

#[test]
fn numbers_take_their_smallest_encoding() {
    let lua = Lua::new();
    assert_eq!(pack(&lua, "1"), [0x01]);
    assert_eq!(pack(&lua, "-1"), [0xff]);
    assert_eq!(pack(&lua, "200"), [0xcc, 200]);
    assert_eq!(pack(&lua, "-200"), [0xd1, 0xff, 0x38]);
    assert_eq!(pack(&lua, "0.5"), [0xca, 0x3f, 0x00, 0x00, 0x00]);
    assert_eq!(pack(&lua, "0.1")[0], 0xcb);
}

#[test]
fn tables_are_arrays_or_maps() {
    let lua = Lua::new();
    assert_eq!(pack(&lua, "{1, 2}"), [0x92, 1, 2]);
    assert_eq!(pack(&lua, "{}"), [0x90]);
    assert_eq!(pack(&lua, "{a = true}"), [0x81, 0xa1, b'a', 0xc3]);
    assert_eq!(pack(&lua, "{[2] = 1}"), [0x81, 2, 1]);
}
