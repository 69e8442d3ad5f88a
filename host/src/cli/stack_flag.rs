//! `--stack NAME`, the form spec 000's examples use (`cdkd destroy --stack MyStack --force`),
//! beside the positional form every command takes. Each `--stack NAME` or `--stack=NAME` is
//! moved behind a `--`, where clap reads it as the command's stack argument, so every command
//! that names stacks accepts both forms without a second field to reconcile.

use std::ffi::OsString;

/// `args` with every `--stack NAME` moved to the positional stacks.
pub fn as_positional(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args = args.into_iter();
    let mut kept = Vec::new();
    let mut stacks = Vec::new();
    let mut after_separator = Vec::new();
    while let Some(arg) = args.next() {
        if arg == "--" {
            after_separator.extend(args.by_ref());
            break;
        }
        if arg == "--stack" {
            match args.next() {
                Some(name) => stacks.push(name),
                // Left for clap, which names the missing value.
                None => kept.push(arg),
            }
            continue;
        }
        match arg.to_str().and_then(|a| a.strip_prefix("--stack=")) {
            Some(name) => stacks.push(OsString::from(name)),
            None => kept.push(arg),
        }
    }
    if !stacks.is_empty() || !after_separator.is_empty() {
        kept.push(OsString::from("--"));
        kept.extend(stacks);
        kept.extend(after_separator);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(line: &str) -> String {
        let args = line.split(' ').map(OsString::from);
        let out: Vec<String> = as_positional(args)
            .into_iter()
            .map(|a| a.into_string().expect("utf-8"))
            .collect();
        out.join(" ")
    }

    #[test]
    fn the_flag_form_becomes_the_positional_form() {
        assert_eq!(
            rewrite("cdkd destroy --stack MyStack --force"),
            "cdkd destroy --force -- MyStack"
        );
        assert_eq!(
            rewrite("cdkd deploy A --stack=B -a app --stack C"),
            "cdkd deploy A -a app -- B C"
        );
        // An option whose value is optional cannot swallow the name.
        assert_eq!(
            rewrite("cdkd import --migrate-from-cloudformation --stack S"),
            "cdkd import --migrate-from-cloudformation -- S"
        );
        assert_eq!(rewrite("cdkd diff -- A --stack"), "cdkd diff -- A --stack");
        assert_eq!(
            rewrite("cdkd deploy --stack-concurrency 2 S"),
            "cdkd deploy --stack-concurrency 2 S"
        );
        assert_eq!(rewrite("cdkd deploy --stack"), "cdkd deploy --stack");
    }
}
