//! The figures a whole bench run saves for the charts bench
//! (`cargo bench --bench charts`), one JSON file per bench.

/// Writes `json` to `benches/results/<name>`.
pub fn save(name: &str, json: &serde_json::Value) {
    let dir = std::path::Path::new("benches/results");
    std::fs::create_dir_all(dir).unwrap();
    let text = serde_json::to_string_pretty(json).unwrap();
    std::fs::write(dir.join(name), text).unwrap();
}
