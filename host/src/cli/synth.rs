//! `cdkd synth [stacks] [-q] [--json]` and `cdkd list|ls [stacks] [-l] [-d] [--json]`.

use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use super::app::{load_assembly, AppArgs};
use super::CommandContext;
use crate::synthesis::selection::select;

#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Stacks to synthesize (names or display paths, `*` wildcards; `--stack NAME` also works).
    stacks: Vec<String>,
    #[command(flatten)]
    app: AppArgs,
    /// Do not print the template.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Print JSON instead of YAML.
    #[arg(long)]
    json: bool,
    /// Only the named stacks, not their dependencies.
    #[arg(long, short = 'e')]
    exclusively: bool,
}

pub async fn run_synth(context: &CommandContext, args: SynthArgs) -> anyhow::Result<ExitCode> {
    let assembly = load_assembly(context, &args.app).await?;
    let all = args.stacks.is_empty();
    let stacks = select(&assembly, &args.stacks, all, args.exclusively || !all)?;
    if args.quiet {
        eprintln!("Successfully synthesized to {}", assembly.dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    if stacks.len() != 1 {
        eprintln!("Successfully synthesized to {}", assembly.dir.display());
        let names: Vec<&str> = stacks.iter().map(|s| s.display_name.as_str()).collect();
        eprintln!(
            "Supply a stack id ({}) to display its template.",
            names.join(", ")
        );
        return Ok(ExitCode::SUCCESS);
    }
    let template = stacks[0].template()?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&template)?);
    } else {
        print!("{}", serde_yaml::to_string(&template)?);
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Stacks to list (names or display paths, `*` wildcards; `--stack NAME` also works); default all.
    stacks: Vec<String>,
    #[command(flatten)]
    app: AppArgs,
    /// Show each stack's name and environment.
    #[arg(long, short = 'l')]
    long: bool,
    /// Show each stack's dependencies.
    #[arg(long, short = 'd')]
    show_dependencies: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub async fn run_list(context: &CommandContext, args: ListArgs) -> anyhow::Result<ExitCode> {
    let assembly = load_assembly(context, &args.app).await?;
    let stacks = select(&assembly, &args.stacks, args.stacks.is_empty(), true)?;
    let environment = |s: &crate::synthesis::assembly::StackArtifact| {
        format!(
            "aws://{}/{}",
            s.environment
                .account
                .as_deref()
                .unwrap_or("unknown-account"),
            s.environment.region.as_deref().unwrap_or("unknown-region")
        )
    };
    if args.json {
        let rows: Vec<_> = stacks
            .iter()
            .map(|s| {
                let dependencies: Vec<&str> = s
                    .dependencies
                    .iter()
                    .filter_map(|d| assembly.stack(d).map(|x| x.display_name.as_str()))
                    .collect();
                json!({"id": s.display_name, "name": s.stack_name, "environment": environment(s), "dependencies": dependencies})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    for stack in stacks {
        if args.long {
            println!(
                "{}\n  name: {}\n  environment: {}",
                stack.display_name,
                stack.stack_name,
                environment(stack)
            );
        } else {
            println!("{}", stack.display_name);
        }
        if args.show_dependencies {
            for dependency in &stack.dependencies {
                if let Some(upstream) = assembly.stack(dependency) {
                    println!("  depends on: {}", upstream.display_name);
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
