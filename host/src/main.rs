//! The `cdkd` command.

fn main() -> std::process::ExitCode {
    cdkd::cli::main()
}
