//! The layering stated in the crate's header, checked: a module may name (`crate::x`) only the
//! layers to its right in the header's chain, so a new import from a higher layer fails this
//! test instead of quietly turning the stated layering into a wish.
//!
//! The chain is read from `lib.rs` itself, so the header and the check cannot drift apart.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// `(layer, higher layer it may name)` pairs the crate header names as exceptions. Empty: the
/// header states none.
const EXCEPTIONS: &[(&str, &str)] = &[];

/// The crate's source directory.
fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The layer chain of the header (`[`cli`] → [`local`] → …`), highest first.
fn chain(lib: &str) -> Vec<String> {
    let header: String = lib
        .lines()
        .filter_map(|line| line.strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join(" ");
    let links = |piece: &str| -> Vec<String> {
        piece
            .split("[`")
            .skip(1)
            .filter_map(|rest| rest.split_once("`]").map(|(name, _)| name.to_string()))
            .collect()
    };
    let pieces: Vec<&str> = header.split('→').collect();
    if pieces.len() < 2 {
        return Vec::new();
    }
    pieces
        .iter()
        .enumerate()
        .filter_map(|(i, piece)| {
            let names = links(piece);
            // The first piece ends with the chain's head; every later one starts with its next link.
            if i == 0 {
                names.last().cloned()
            } else {
                names.first().cloned()
            }
        })
        .collect()
}

/// The crate's top-level modules (`mod x;` lines of `lib.rs`), without this one.
fn top_modules(lib: &str) -> BTreeSet<String> {
    lib.lines()
        .map(str::trim)
        .filter(|line| !line.starts_with("//") && !line.starts_with("#"))
        .filter_map(|line| {
            let line = line.strip_prefix("pub ").unwrap_or(line);
            line.strip_prefix("mod ")?
                .strip_suffix(';')
                .map(str::to_string)
        })
        // Test-only modules, outside the layering: this check and the fuzz targets.
        .filter(|name| name != "layers" && name != "fuzz")
        .collect()
}

/// The top-level modules a source file names through `crate::` (or `$crate::`), groups
/// (`use crate::{a, b::c}`) included; comment lines are skipped, as links in docs are not uses.
fn named_modules(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let code: Vec<(usize, &str)> = source
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .collect();
    let text: String = code
        .iter()
        .map(|(_, line)| *line)
        .collect::<Vec<_>>()
        .join("\n");
    let line_of = |offset: usize| code[text[..offset].matches('\n').count()].0 + 1;
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in text.match_indices("crate::") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &text[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => item_start = true,
                    c if item_start && depth == 1 && !c.is_whitespace() => {
                        item_start = false;
                        found.push((line_of(at), ident(&group[i..])));
                    }
                    _ => {}
                }
            }
        } else {
            found.push((line_of(at), ident(rest)));
        }
    }
    found
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read the source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_header_chain_names_every_top_level_module() {
    let lib = fs::read_to_string(src_dir().join("lib.rs")).expect("read lib.rs");
    let layers: BTreeSet<String> = chain(&lib).into_iter().collect();
    let modules = top_modules(&lib);
    assert!(
        modules.len() > 5,
        "found the modules of lib.rs: {modules:?}"
    );
    let missing: Vec<_> = modules.difference(&layers).collect();
    assert!(
        missing.is_empty(),
        "lib.rs's header does not place {missing:?} in its layer chain"
    );
}

#[test]
fn no_module_names_a_higher_layer() {
    let src = src_dir();
    let lib = fs::read_to_string(src.join("lib.rs")).expect("read lib.rs");
    let layers = chain(&lib);
    let rank = |name: &str| layers.iter().position(|layer| layer == name);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).expect("under src");
        let top = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .map(|name| name.trim_end_matches(".rs").to_string())
            .unwrap_or_default();
        let Some(own) = rank(&top) else { continue };
        let source = fs::read_to_string(file).expect("read a source file");
        for (line, named) in named_modules(&source) {
            let higher = rank(&named).is_some_and(|other| other < own);
            if higher && !EXCEPTIONS.contains(&(top.as_str(), named.as_str())) {
                violations.push(format!(
                    "{}:{line}: `{top}` names `crate::{named}`, a higher layer",
                    relative.display()
                ));
            }
        }
    }
    assert!(files.len() > 50, "found the source files: {}", files.len());
    assert!(
        violations.is_empty(),
        "imports from a higher layer:\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_chain_and_the_uses_are_read_as_written() {
    let lib = "//! Layers: [`cli`] → [`deployment`]\n//! → [`state`]. (`x` uses [`state::y`].)\npub mod cli;\n#[cfg(test)]\nmod layers;\nmod state;\n";
    assert_eq!(chain(lib), ["cli", "deployment", "state"]);
    assert_eq!(
        top_modules(lib),
        BTreeSet::from(["cli".into(), "state".into()])
    );
    let source = "use crate::state::x;\n// crate::cli::y in a comment\nuse crate::{\n    analyzer::{a, b},\n    deployment,\n};\nlet v = $crate::aws_env::f();\nlet w = other_crate::cli::z;\n";
    assert_eq!(
        named_modules(source),
        [
            (1, "state".to_string()),
            (3, "analyzer".to_string()),
            (3, "deployment".to_string()),
            (7, "aws_env".to_string()),
        ]
    );
}
