//! The synthesis annotations a deploy honours, as the CDK CLI does after it synthesizes: a
//! stack whose constructs reported an error is refused before anything is deployed, warnings
//! are shown (and refused under `--strict`), and `--ignore-errors` deploys despite errors.

use super::assembly::{AnnotationLevel, StackArtifact};

/// How strictly annotations are applied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Strictness {
    /// Refuse warnings too (`--strict`).
    pub strict: bool,
    /// Deploy despite errors (`--ignore-errors`).
    pub ignore_errors: bool,
}

/// The lines to show for `stacks`' annotations (as the CDK CLI prints them: `[Warning at
/// /Stack/Construct] message`), and the refusal when one must stop the deploy.
pub fn check(stacks: &[&StackArtifact], strictness: Strictness) -> (Vec<String>, Option<String>) {
    let mut shown = Vec::new();
    let mut refusals = Vec::new();
    for stack in stacks {
        let mut refused = Vec::new();
        for annotation in &stack.annotations {
            let (label, refuses) = match annotation.level {
                AnnotationLevel::Error => ("Error", !strictness.ignore_errors),
                AnnotationLevel::Warning => ("Warning", strictness.strict),
                AnnotationLevel::Info => ("Info", false),
            };
            let line = format!("[{label} at {}] {}", annotation.path, annotation.message);
            if refuses {
                refused.push(line.clone());
            }
            shown.push(line);
        }
        if !refused.is_empty() {
            refusals.push(format!(
                "stack {} has {} synthesis {} that stop a deploy:\n  {}",
                stack.display_name,
                refused.len(),
                if refused.len() == 1 {
                    "message"
                } else {
                    "messages"
                },
                refused.join("\n  ")
            ));
        }
    }
    let refusal = (!refusals.is_empty()).then(|| {
        format!(
            "{}\nnothing was deployed: fix them in the app (errors always; warnings under --strict), or deploy anyway with --ignore-errors (errors) or without --strict (warnings)",
            refusals.join("\n")
        )
    });
    (shown, refusal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthesis::assembly::{Annotation, StackEnvironment};

    fn stack(name: &str, annotations: &[(AnnotationLevel, &str)]) -> StackArtifact {
        StackArtifact {
            id: name.into(),
            stack_name: name.into(),
            display_name: name.into(),
            template_file: Default::default(),
            environment: StackEnvironment::default(),
            dependencies: Vec::new(),
            termination_protection: false,
            asset_manifest: None,
            annotations: annotations
                .iter()
                .map(|(level, message)| Annotation {
                    level: *level,
                    path: format!("/{name}/Queue"),
                    message: (*message).into(),
                })
                .collect(),
        }
    }

    #[test]
    fn errors_refuse_unless_ignored_and_warnings_only_under_strict() {
        use AnnotationLevel::{Error, Info, Warning};
        let checked = stack(
            "Checked",
            &[(Error, "needs a DLQ"), (Warning, "short retention")],
        );
        let warned = stack("Warned", &[(Warning, "no name"), (Info, "encrypted")]);
        let both = [&checked, &warned];

        let (shown, refusal) = check(&both, Strictness::default());
        assert_eq!(shown.len(), 4);
        assert_eq!(shown[0], "[Error at /Checked/Queue] needs a DLQ");
        let refusal = refusal.expect("an error refuses");
        assert!(
            refusal.contains("stack Checked has 1 synthesis message"),
            "{refusal}"
        );
        assert!(!refusal.contains("Warned"), "{refusal}");

        let ignoring = Strictness {
            ignore_errors: true,
            ..Default::default()
        };
        assert_eq!(check(&both, ignoring).1, None);

        let strict = Strictness {
            strict: true,
            ignore_errors: true,
        };
        let refusal = check(&both, strict)
            .1
            .expect("warnings refuse under --strict");
        assert!(
            refusal.contains("[Warning at /Warned/Queue] no name"),
            "{refusal}"
        );
        assert!(!refusal.contains("encrypted"), "{refusal}");
        assert_eq!(check(&[&warned], Strictness::default()).1, None);
    }
}
