//! `cdkd local`: a stack's Lambda functions and API Gateway APIs run on this machine from the
//! synthesized template and asset folders, wired to the deployed stack through its state.
//!
//! [`function`] reads a function from the template, [`runtime`] picks its interpreter and
//! bootstrap, [`environment`] resolves its variables, [`invoke`] runs it once, [`container`]
//! runs it in the runtime's Lambda image instead, [`api`] turns the template's APIs into route
//! tables and Lambda proxy events, and [`server`] serves them over HTTP on 127.0.0.1.

pub mod api;
pub mod container;
pub mod environment;
pub mod function;
pub mod invoke;
pub mod runtime;
pub mod server;

/// What `cdkd local` refuses, naming the function, file or route.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// The name is a resource, but not a function.
    #[error("{0} is not an AWS::Lambda::Function")]
    NotAFunction(String),
    /// No function under a construct path.
    #[error("no Lambda function of stack {stack} is under {path}; its functions: {functions}")]
    NoSuchFunction {
        /// The stack.
        stack: String,
        /// The path asked for.
        path: String,
        /// The functions there are.
        functions: String,
    },
    /// Several functions under a construct path.
    #[error("{path} holds several Lambda functions ({functions}); name one")]
    SeveralFunctions {
        /// The path asked for.
        path: String,
        /// The functions under it.
        functions: String,
    },
    /// A function without code cdkd can find.
    #[error("function {0} has no code folder cdkd local can run (no aws:asset:path metadata and no inline code)")]
    NoCode(String),
    /// A runtime cdkd cannot run from PATH.
    #[error(
        "function {function} uses {runtime}, which cdkd local cannot run on this machine; {hint}"
    )]
    Unsupported {
        /// The function.
        function: String,
        /// The runtime, described.
        runtime: String,
        /// What to do.
        hint: String,
    },
    /// The runtime's interpreter is not on PATH.
    #[error("function {function} needs {wanted} on PATH, and there is none; install it or put it on PATH")]
    NoInterpreter {
        /// The function.
        function: String,
        /// The interpreter names looked for.
        wanted: String,
    },
    /// `--container` without a usable Docker.
    #[error("--container runs functions in their runtime's Lambda image with Docker, and {0}; install and start Docker, or run without --container (the runtime on PATH)")]
    NoDocker(String),
    /// The function's environment could not be resolved at all.
    #[error("the environment cannot be resolved: {0}")]
    Environment(String),
    /// The `--env-override` file is malformed.
    #[error("--env-override: {0}")]
    EnvOverride(String),
    /// A file or process problem.
    #[error("{0}")]
    Io(String),
    /// A stack without APIs for `start-api`.
    #[error("stack {0} has no API Gateway REST or HTTP API (AWS::ApiGateway::RestApi, AWS::ApiGatewayV2::Api) to serve")]
    NoApis(String),
}

/// How a function runs: a process on this machine, or a container.
pub enum Runner {
    /// The runtime on PATH.
    Process(invoke::LocalInvoker),
    /// The runtime's Lambda image (`--container`).
    Container(container::ContainerInvoker),
}

impl Runner {
    /// The function.
    pub fn function(&self) -> &function::LocalFunction {
        match self {
            Runner::Process(p) => &p.function,
            Runner::Container(c) => &c.function,
        }
    }

    /// Runs the function once with `event`.
    pub async fn invoke(
        &self,
        event: &serde_json::Value,
        prefix: &str,
    ) -> Result<invoke::Invocation, LocalError> {
        match self {
            Runner::Process(p) => p.invoke(event, prefix).await,
            Runner::Container(c) => c.invoke(event, prefix).await,
        }
    }
}
