//! Cost files for `--cost-file`: a `[costs]` table of `key = nanoseconds`, checked against
//! `Costs::KEYS` so a misspelt key is an error with its line, not a silently ignored setting.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use sim::topology::Costs;
use toml::Spanned;

use crate::error::{MachineError, line_column};
use crate::topology_file::syntax_error;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CostFile {
    costs: BTreeMap<String, Spanned<u64>>,
}

/// Reads a cost file and returns its overrides in file order.
pub fn load_cost_file(path: &Path) -> Result<Vec<(String, u64)>, MachineError> {
    let text = std::fs::read_to_string(path).map_err(|error| MachineError::Read { path: path.to_path_buf(), error })?;
    parse_cost_toml(&text, &path.display().to_string())
}

/// Parses cost overrides; `origin` names the text in errors.
pub fn parse_cost_toml(text: &str, origin: &str) -> Result<Vec<(String, u64)>, MachineError> {
    let file: CostFile = toml::from_str(text).map_err(|error| syntax_error(text, origin, &error))?;
    let mut entries: Vec<(String, Spanned<u64>)> = file.costs.into_iter().collect();
    entries.sort_by_key(|(_, value)| value.span().start);
    let mut overrides = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        if let Err(message) = Costs::check_value(&key, *value.get_ref()) {
            let (line, _) = line_column(text, value.span().start);
            return Err(MachineError::Invalid {
                origin: origin.to_string(),
                line: Some(line),
                field: format!("costs.{key}"),
                message,
            });
        }
        overrides.push((key, value.into_inner()));
    }
    Ok(overrides)
}
