//! The JSON Schemas in `docs/protocol/` are generated from the wire types; this fails when they
//! drift. Regenerate with `HOOKLINE_BLESS=1 cargo test --test external_protocol_schemas`.

use hookline::messages::protocol::schemas;

#[test]
fn protocol_schemas_in_docs_match_the_wire_types() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/protocol");
    let bless = std::env::var_os("HOOKLINE_BLESS").is_some();
    for schema in schemas() {
        let path = dir.join(schema.file_name);
        if bless {
            assert!(std::fs::create_dir_all(&dir).is_ok());
            assert!(std::fs::write(&path, &schema.text).is_ok());
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == schema.text,
            "{} is out of date: run HOOKLINE_BLESS=1 cargo test --test external_protocol_schemas",
            path.display()
        );
    }
}
