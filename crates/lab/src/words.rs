//! Workload command lines as one string (`--workload "hackbench -g 4"`, plan files) and back:
//! a small POSIX-shell-like splitter and quoter, enough for argv without expansions.

/// Splits a command line into words: whitespace separates, `'…'` quotes literally, `"…"`
/// quotes with `\"` and `\\` escapes, and a backslash outside quotes escapes the next character.
pub fn split(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(format!("unterminated ' quote in `{line}`")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(format!("unterminated \" quote in `{line}`")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(format!("unterminated \" quote in `{line}`")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err(format!("trailing backslash in `{line}`")),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// Quotes one word for a POSIX shell, only when it needs it.
pub fn quote(word: &str) -> String {
    let plain = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%^".contains(c));
    if plain { word.to_string() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

/// Joins words into a command line that [`split`] (and a shell) turns back into the same words.
pub fn join(words: &[String]) -> String {
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_join_round_trip() {
        assert_eq!(split("hackbench -P -g 4").unwrap(), ["hackbench", "-P", "-g", "4"]);
        assert_eq!(split("  rtapp 'my file.json' ").unwrap(), ["rtapp", "my file.json"]);
        assert_eq!(split(r#"a "b \"c\"" d\ e ''"#).unwrap(), ["a", "b \"c\"", "d e", ""]);
        assert!(split("a 'b").is_err());
        for words in [vec!["rtapp", "my file.json"], vec!["netperf", "--", "-r", "1,1"], vec!["x", "it's", ""]] {
            let words: Vec<String> = words.into_iter().map(String::from).collect();
            assert_eq!(split(&join(&words)).unwrap(), words);
        }
        assert_eq!(join(&["v7.3 +next-buddy-eevdf".to_string()]), "'v7.3 +next-buddy-eevdf'");
    }
}
