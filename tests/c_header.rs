//! include/dlbridge.h is generated from src/capi/ by cbindgen and checked
//! in; this test fails when it is stale. Regenerate it with
//! `DLBRIDGE_BLESS=1 cargo test --features capi --test c_header`.
#![cfg(feature = "capi")]

use std::path::Path;

#[test]
fn header_is_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_src(root.join("src/capi/mod.rs"))
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate the header")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("utf-8");
    let path = root.join("include/dlbridge.h");
    if std::env::var_os("DLBRIDGE_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/dlbridge.h");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "include/dlbridge.h is stale: run `DLBRIDGE_BLESS=1 cargo test --features capi --test c_header` \
         and commit the result"
    );
}
