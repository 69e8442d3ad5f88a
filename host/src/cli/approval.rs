//! `--require-approval`: the security-sensitive changes of a stack printed as the CDK CLI
//! prints them, and the question asked on the terminal before they are deployed.

use std::io::{BufRead, IsTerminal, Write};

use crate::analyzer::security::{RequireApproval, SecurityChanges};
use crate::deployment::deploy::{Approver, NoAnswer};

use super::{in_ci, table};

/// The tables `cdkd diff` and the approval question show: IAM statements, managed policies,
/// security-group rules (only the non-empty ones), each row marked `+` or `-`.
pub fn tables(changes: &SecurityChanges) -> String {
    let mut out = String::new();
    if !changes.statements.is_empty() {
        let rows: Vec<Vec<String>> = (changes.statements.iter())
            .map(|(sign, s)| {
                vec![
                    sign.mark().into(),
                    s.resource.clone(),
                    s.effect.clone(),
                    s.action.clone(),
                    s.principal.clone(),
                    s.condition.clone(),
                ]
            })
            .collect();
        out.push_str("IAM Statement Changes\n");
        out.push_str(&table::render(
            &["", "Resource", "Effect", "Action", "Principal", "Condition"],
            &rows,
        ));
        out.push('\n');
    }
    if !changes.managed_policies.is_empty() {
        let rows: Vec<Vec<String>> = (changes.managed_policies.iter())
            .map(|(sign, p)| vec![sign.mark().into(), p.resource.clone(), p.policy.clone()])
            .collect();
        out.push_str("IAM Policy Changes\n");
        out.push_str(&table::render(
            &["", "Resource", "Managed Policy ARN"],
            &rows,
        ));
    }
    if !changes.rules.is_empty() {
        let rows: Vec<Vec<String>> = (changes.rules.iter())
            .map(|(sign, r)| {
                vec![
                    sign.mark().into(),
                    r.group.clone(),
                    r.direction.into(),
                    r.protocol.clone(),
                    r.peer.clone(),
                ]
            })
            .collect();
        out.push_str("Security Group Changes\n");
        out.push_str(&table::render(
            &["", "Group", "Dir", "Protocol", "Peer"],
            &rows,
        ));
        out.push('\n');
    }
    out
}

/// Asks on the terminal, one stack at a time.
#[derive(Debug, Default)]
pub struct TerminalApprover {
    asking: tokio::sync::Mutex<()>,
}

#[async_trait::async_trait]
impl Approver for TerminalApprover {
    async fn approve(
        &self,
        stack: &str,
        level: RequireApproval,
        changes: &SecurityChanges,
    ) -> Result<bool, NoAnswer> {
        if in_ci() {
            return Err("cdkd runs as in CI (--ci or CI set), where it never asks".into());
        }
        if !std::io::stdin().is_terminal() {
            return Err("there is no terminal to ask on".into());
        }
        // Stacks deploy in parallel: one question on the terminal at a time.
        let _turn = self.asking.lock().await;
        let question = format!(
            "Stack {stack}: this deployment will make potentially sensitive changes according to your current security approval level (--require-approval {}).\nPlease confirm you intend to make the following modifications:\n\n{}\nDo you wish to deploy these changes (y/n)? ",
            level.as_str(),
            tables(changes)
        );
        let answer = tokio::task::spawn_blocking(move || -> std::io::Result<String> {
            let mut stderr = std::io::stderr().lock();
            stderr.write_all(crate::printable::printable(&question).as_bytes())?;
            stderr.flush()?;
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line)?;
            Ok(line)
        })
        .await
        .map_err(|e| format!("the question could not be asked: {e}"))?
        .map_err(|e| format!("the answer could not be read: {e}"))?;
        Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer::security::{ManagedPolicy, Rule, Sign, Statement};

    #[test]
    fn tables_show_only_what_changes_marked_as_the_cdk_cli_marks_it() {
        let changes = SecurityChanges {
            statements: vec![(
                Sign::Added,
                Statement {
                    resource: "${Role.Arn}".into(),
                    effect: "Allow".into(),
                    action: "sts:AssumeRole".into(),
                    principal: r#"{"Service":"lambda.amazonaws.com"}"#.into(),
                    condition: String::new(),
                },
            )],
            managed_policies: vec![(
                Sign::Removed,
                ManagedPolicy {
                    resource: "${Role}".into(),
                    policy: "arn:aws:iam::aws:policy/ReadOnlyAccess".into(),
                },
            )],
            rules: Vec::<(Sign, Rule)>::new(),
        };
        let text = tables(&changes);
        assert!(text.starts_with("IAM Statement Changes\n"), "{text}");
        assert!(
            text.contains(
                "+  ${Role.Arn}  Allow   sts:AssumeRole  {\"Service\":\"lambda.amazonaws.com\"}"
            ),
            "{text}"
        );
        assert!(text.contains("IAM Policy Changes\n"), "{text}");
        assert!(
            text.contains("-  ${Role}   arn:aws:iam::aws:policy/ReadOnlyAccess"),
            "{text}"
        );
        assert!(!text.contains("Security Group Changes"), "{text}");
    }
}
