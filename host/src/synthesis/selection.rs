//! Picking stacks the way the CDK CLI does: names or display paths with `*` wildcards,
//! `--all`, and upstream dependencies unless `--exclusively`; the result in dependency order.

use std::collections::BTreeSet;

use super::assembly::{CloudAssembly, StackArtifact};

/// A selection that cannot be made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SelectionError {
    /// Several stacks and no pattern.
    #[error("the app has {count} stacks ({names}); name the ones you mean, or pass --all")]
    Ambiguous {
        /// How many.
        count: usize,
        /// Their names.
        names: String,
    },
    /// A pattern matched nothing.
    #[error("no stack matches '{pattern}'; the app's stacks are: {names}")]
    NoMatch {
        /// The pattern.
        pattern: String,
        /// The stacks there are.
        names: String,
    },
    /// The app has no stack at all.
    #[error("the app has no stacks")]
    Empty,
}

/// `*` matches any run of characters (including `/`); everything else literally.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let mut rest = text;
    for (index, part) in parts.iter().enumerate() {
        if index == 0 {
            match rest.strip_prefix(part) {
                Some(after) => rest = after,
                None => return false,
            }
        } else if index == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

fn names(assembly: &CloudAssembly) -> String {
    assembly
        .stacks
        .iter()
        .map(|s| s.display_name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every stack in dependency order (dependencies first, otherwise manifest order).
pub fn dependency_order<'a>(
    assembly: &'a CloudAssembly,
    chosen: &BTreeSet<String>,
) -> Vec<&'a StackArtifact> {
    let mut ordered: Vec<&StackArtifact> = Vec::new();
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    let mut visiting: BTreeSet<&str> = BTreeSet::new();
    fn visit<'a>(
        assembly: &'a CloudAssembly,
        stack: &'a StackArtifact,
        chosen: &BTreeSet<String>,
        placed: &mut BTreeSet<&'a str>,
        visiting: &mut BTreeSet<&'a str>,
        ordered: &mut Vec<&'a StackArtifact>,
    ) {
        if placed.contains(stack.id.as_str()) || !visiting.insert(stack.id.as_str()) {
            return;
        }
        for dependency in &stack.dependencies {
            if let Some(upstream) = assembly.stack(dependency) {
                visit(assembly, upstream, chosen, placed, visiting, ordered);
            }
        }
        placed.insert(stack.id.as_str());
        if chosen.contains(&stack.id) {
            ordered.push(stack);
        }
    }
    for stack in &assembly.stacks {
        visit(
            assembly,
            stack,
            chosen,
            &mut placed,
            &mut visiting,
            &mut ordered,
        );
    }
    ordered
}

/// The stacks a command acts on.
pub fn select<'a>(
    assembly: &'a CloudAssembly,
    patterns: &[String],
    all: bool,
    exclusively: bool,
) -> Result<Vec<&'a StackArtifact>, SelectionError> {
    if assembly.stacks.is_empty() {
        return Err(SelectionError::Empty);
    }
    let mut chosen: BTreeSet<String> = BTreeSet::new();
    if all || (patterns.is_empty() && assembly.stacks.len() == 1) {
        chosen.extend(assembly.stacks.iter().map(|s| s.id.clone()));
    } else if patterns.is_empty() {
        return Err(SelectionError::Ambiguous {
            count: assembly.stacks.len(),
            names: names(assembly),
        });
    } else {
        for pattern in patterns {
            let matched: Vec<&StackArtifact> = assembly
                .stacks
                .iter()
                .filter(|s| {
                    [&s.id, &s.stack_name, &s.display_name]
                        .iter()
                        .any(|name| glob_matches(pattern, name))
                })
                .collect();
            if matched.is_empty() {
                return Err(SelectionError::NoMatch {
                    pattern: pattern.clone(),
                    names: names(assembly),
                });
            }
            chosen.extend(matched.into_iter().map(|s| s.id.clone()));
        }
    }
    if !exclusively {
        let mut pending: Vec<String> = chosen.iter().cloned().collect();
        while let Some(id) = pending.pop() {
            for dependency in assembly
                .stack(&id)
                .map(|s| s.dependencies.clone())
                .unwrap_or_default()
            {
                if chosen.insert(dependency.clone()) {
                    pending.push(dependency);
                }
            }
        }
    }
    Ok(dependency_order(assembly, &chosen))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn app() -> CloudAssembly {
        CloudAssembly::read(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/cdk.out/app"),
        )
        .unwrap()
    }

    fn ids(stacks: &[&StackArtifact]) -> Vec<String> {
        stacks.iter().map(|s| s.id.clone()).collect()
    }

    #[test]
    fn globs() {
        assert!(glob_matches("App*", "AppStack"));
        assert!(glob_matches("*Stack", "Stage/ProducerStack"));
        assert!(glob_matches("Stage/*/Db", "Stage/Eu/Db"));
        assert!(!glob_matches("App", "AppStack"));
        assert!(glob_matches("*", ""));
    }

    #[test]
    fn dependencies_come_along_and_first_unless_exclusively() {
        let assembly = app();
        assert_eq!(
            ids(&select(&assembly, &["AppStack".into()], false, false).unwrap()),
            ["ProducerStack", "AppStack"]
        );
        assert_eq!(
            ids(&select(&assembly, &["AppStack".into()], false, true).unwrap()),
            ["AppStack"]
        );
        assert_eq!(
            ids(&select(&assembly, &[], true, false).unwrap()),
            ["ProducerStack", "AppStack"]
        );
        assert_eq!(
            ids(&select(&assembly, &["*Stack".into()], false, true).unwrap()),
            ["ProducerStack", "AppStack"]
        );
    }

    #[test]
    fn ambiguity_and_misses_are_errors_naming_the_stacks() {
        let assembly = app();
        assert_eq!(
            select(&assembly, &[], false, false)
                .unwrap_err()
                .to_string(),
            "the app has 2 stacks (ProducerStack, AppStack); name the ones you mean, or pass --all"
        );
        assert!(select(&assembly, &["Nope".into()], false, false)
            .unwrap_err()
            .to_string()
            .starts_with("no stack matches 'Nope'"));
    }
}
