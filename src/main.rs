use std::process::ExitCode;

use clap::Parser;
use tern::cli::{Cli, Command};
use tern::config::ConfigSources;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => {
            eprintln!("tern: cannot read the current directory: {e}");
            return ExitCode::from(2);
        }
    };
    let settings = match tern::config::load(&cli.global, &ConfigSources::discover(&cwd), |k| {
        std::env::var(k).ok()
    }) {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("tern: {e}");
            return ExitCode::from(2);
        }
    };
    match &cli.command {
        Some(Command::Map(args)) => tern::headless::map::run(args, &cli.global, &settings, &cwd),
        _ => {
            println!("{cli:?}");
            ExitCode::SUCCESS
        }
    }
}
