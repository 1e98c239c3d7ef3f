//! The `sovereign` binary: the global allocator, the command line's top level and its dispatch to
//! the subcommands (`cli/`); before anything starts, the document extraction child and a stdio MCP
//! server's sandbox.

mod cli;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use cli::journal::JournalCommand;
use cli::policy::PolicyCommand;
use cli::servers;

/// mimalloc rather than glibc's malloc: allocation was a fifth of a request's instructions
/// (bench/README.md, "Profile").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "sovereign",
    version,
    about = "Sovereign Gateway: an OpenAI-compatible gateway for self-hosted models"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway with a configuration file.
    Serve {
        #[arg(long)]
        config: PathBuf,
    },
    /// Run the gateway on embedded defaults in front of a built-in simulated model fleet.
    Demo {
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// Where the demo keeps its files (its generated config, later its store).
        #[arg(long, default_value = "sovereign-data")]
        data_dir: PathBuf,
        /// Serve HTTPS with optional client certificates; a demo PKI is written under
        /// `<data-dir>/tls/` (CA, server, a client certificate per role, revoked, expired, CRL).
        #[arg(long)]
        tls: bool,
    },
    /// Run the simulated model fleet alone (an OpenAI-compatible server), e.g. for benchmarks.
    Simulate {
        #[arg(long, default_value = "127.0.0.1:9000")]
        listen: SocketAddr,
        /// Delay before each response's headers, in milliseconds.
        #[arg(long, default_value_t = 0)]
        latency_ms: u64,
        /// Delay between two streamed tokens, in milliseconds.
        #[arg(long, default_value_t = 0)]
        token_interval_ms: u64,
    },
    /// Validate a configuration file and print every error with its path.
    CheckConfig { file: PathBuf },
    /// Generate a new API key: prints the secret and the `hash` line for the config file.
    Keygen,
    /// The activity journal.
    Journal {
        #[command(subcommand)]
        command: JournalCommand,
    },
    /// Policy components (Wasm).
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
}

fn main() -> ExitCode {
    // The document extraction child (`sovereign_documents::extract_in_child` runs the gateway's
    // own binary so): stdin → stdout, before logging or the runtime exist.
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args.len() == 1 && args[0] == sovereign_documents::EXTRACT_SUBCOMMAND {
        return ExitCode::from(sovereign_documents::child_main(
            std::io::stdin().lock(),
            std::io::stdout().lock(),
        ));
    }
    // A stdio MCP server's sandbox (`sovereign::mcp::sandbox`): caps set, then the server exec'd.
    if args
        .first()
        .is_some_and(|a| a == sovereign::mcp::sandbox::STDIO_SUBCOMMAND)
    {
        return ExitCode::from(sovereign::mcp::sandbox::child_main(&args[1..]));
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::CheckConfig { file } => cli::config_file::check_config(&file),
        Command::Keygen => cli::config_file::keygen(),
        Command::Journal { command } => cli::journal::run(command),
        Command::Policy { command } => cli::policy::run(command),
        Command::Serve { config } => cli::exit(cli::block_on(servers::serve(config))),
        Command::Demo {
            listen,
            data_dir,
            tls,
        } => cli::exit(cli::block_on(servers::demo(listen, data_dir, tls))),
        Command::Simulate {
            listen,
            latency_ms,
            token_interval_ms,
        } => cli::exit(cli::block_on(servers::simulate(
            listen,
            latency_ms,
            token_interval_ms,
        ))),
    }
}
