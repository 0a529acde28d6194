use clap::Parser;

fn main() {
    let cli = tern::cli::Cli::parse();
    println!("{cli:?}");
}
