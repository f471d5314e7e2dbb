//! The one error type of the crate. Every variant says where the problem is: the file (or sysfs
//! path), the line when there is one, and the field.

use std::path::PathBuf;

/// Why a machine description could not be used.
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    /// A file or directory could not be read.
    #[error("{}: {error}", path.display())]
    Read { path: PathBuf, error: std::io::Error },

    /// The text is not TOML, or does not fit the format (unknown field, wrong type, missing
    /// field). `message` names the field.
    #[error("{origin}:{line}:{column}: {message}")]
    Syntax { origin: String, line: usize, column: usize, message: String },

    /// The file parses but describes an impossible machine or an unknown cost key. `field` is the
    /// key as written in the file (`llc`, `distance`, `costs.syscall_ns`, ...).
    #[error("{origin}{}: field `{field}`: {message}", line_suffix(*line))]
    Invalid { origin: String, line: Option<usize>, field: String, message: String },

    /// A sysfs file whose content cannot be interpreted.
    #[error("{}: {message}", path.display())]
    Sysfs { path: PathBuf, message: String },
}

fn line_suffix(line: Option<usize>) -> String {
    line.map(|line| format!(":{line}")).unwrap_or_default()
}

/// The 1-based line and column (in characters) of a byte offset into `text`. Offsets past the
/// end, or inside a multi-byte character, resolve to the nearest earlier character.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = char_floor(text, offset);
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// The largest character boundary of `text` at or before `offset`.
fn char_floor(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// The key of a `key = value` line containing `offset`, if the line has that shape. TOML's own
/// messages for wrong types name the expected type but not the key, so errors add it.
pub(crate) fn key_at(text: &str, offset: usize) -> Option<String> {
    let offset = char_floor(text, offset);
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let (key, _) = text[line_start..line_end].split_once('=')?;
    let key = key.trim().trim_matches('"');
    let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    plain.then(|| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_map_to_lines_and_columns() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        assert_eq!(line_column(text, 12), (2, 6));
        assert_eq!(line_column(text, 999), (3, 1));
        assert_eq!(key_at(text, 8), None);
        assert_eq!(key_at("x\n  cores_per_llc = \"x\"\n", 20), Some("cores_per_llc".into()));
    }
}
