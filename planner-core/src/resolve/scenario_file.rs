//! Reading a scenario file: its JSON parsed with every type error named by its
//! JSON path, then checked by [`crate::resolve::validate`]. Defined here, not
//! beside [`Scenario`], because reading ends in the rules, which sit above the types.

use crate::input::scenario::Scenario;

/// Largest scenario file read, bytes (a scenario with a calibration is a few KB).
pub const MAX_SCENARIO_JSON_BYTES: usize = 1 << 20;

impl Scenario {
    /// Reads a scenario file's JSON and validates it: a type error names its JSON path
    /// (`layout.tp`, `cluster.gpu.memory_bytes`), an unknown field is refused by name,
    /// and every value then passes [`Scenario::validate`], its errors renamed from link
    /// parameters to JSON paths too (`gpu_mem` → `cluster.gpu.memory_bytes`,
    /// [`crate::resolve::json_path`]).
    pub fn from_json(json: &str) -> Result<Scenario, Vec<crate::resolve::validate::FieldError>> {
        use crate::resolve::validate::FieldError;
        if json.len() > MAX_SCENARIO_JSON_BYTES {
            return Err(vec![FieldError::new(
                "scenario",
                format!(
                    "the file is {} bytes, over {MAX_SCENARIO_JSON_BYTES}",
                    json.len()
                ),
            )]);
        }
        let mut de = serde_json::Deserializer::from_str(json);
        let mut scenario: Scenario = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let field = if path.is_empty() || path == "." {
                "scenario".to_string()
            } else {
                path
            };
            vec![FieldError::new(&field, e.inner().to_string())]
        })?;
        de.end()
            .map_err(|e| vec![FieldError::new("scenario", e.to_string())])?;
        // Files written before the datasheet label existed: a preset GPU takes its label.
        let gpu = &mut scenario.cluster.gpu;
        if gpu.datasheet_memory_bytes == 0.0 {
            if let Some(preset) = crate::input::hardware::gpu_preset(&gpu.id) {
                gpu.datasheet_memory_bytes = preset.datasheet_memory_bytes;
            }
        }
        // Validation names link parameters; a file's reader wrote JSON paths.
        scenario.validate().map_err(|errors| {
            errors
                .into_iter()
                .map(crate::resolve::json_path::to_json_path)
                .collect::<Vec<_>>()
        })?;
        Ok(scenario)
    }
}
