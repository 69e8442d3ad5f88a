//! The AWS environment the host resolves once per run: region, credentials, endpoint.
//!
//! Plugins do not run the credential chain themselves: the host resolves credentials here and
//! hands them over in `init`, refreshing them through a callback when they expire.

use std::path::PathBuf;

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::provider::ProvideCredentials as _;
use cdkd_provider_api::protocol::Credentials;

/// The region used when neither flags nor the SDK's chain name one.
pub const FALLBACK_REGION: &str = "us-east-1";

/// What the user asked for on the command line.
#[derive(Debug, Clone, Default)]
pub struct AwsOptions {
    /// `--profile`.
    pub profile: Option<String>,
    /// `--region`.
    pub region: Option<String>,
    /// `--s3-force-path-style` / `CDKD_S3_FORCE_PATH_STYLE`.
    pub s3_force_path_style: bool,
    /// One endpoint for every service, instead of the environment's `AWS_ENDPOINT_URL`
    /// (library callers such as tests; the CLI leaves it to the environment).
    pub endpoint_url: Option<String>,
    /// Fixed credentials instead of the SDK's chain (library callers; the CLI uses the chain).
    pub static_credentials: Option<StaticCredentials>,
    /// Where cached facts and schemas go, instead of [`cache_dir`] (library callers).
    pub cache_dir: Option<PathBuf>,
    /// `--role-arn` / `CDKD_ROLE_ARN`: calls are made with this role's credentials, assumed
    /// from the chain's (and refreshed before they expire).
    pub role_arn: Option<String>,
}

/// An access key pair given directly.
#[derive(Debug, Clone)]
pub struct StaticCredentials {
    /// The access key id.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
}

/// The resolved environment.
#[derive(Debug, Clone)]
pub struct AwsEnvironment {
    sdk_config: SdkConfig,
    s3_force_path_style: bool,
    cache_dir: Option<PathBuf>,
}

/// Credentials could not be resolved.
#[derive(Debug, thiserror::Error)]
#[error("no AWS credentials: {0}. Set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or pass --profile")]
pub struct CredentialsError(String);

impl AwsEnvironment {
    /// Resolves the SDK configuration (no network call unless the chain needs one).
    pub async fn load(options: &AwsOptions) -> AwsEnvironment {
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .retry_config(cdkd_aws_common::retry_config());
        if let Some(profile) = &options.profile {
            loader = loader.profile_name(profile);
        }
        if let Some(region) = &options.region {
            loader = loader.region(Region::new(region.clone()));
        }
        if let Some(endpoint) = &options.endpoint_url {
            loader = loader.endpoint_url(endpoint);
        }
        if let Some(keys) = &options.static_credentials {
            loader = loader.credentials_provider(aws_credential_types::Credentials::new(
                &keys.access_key_id,
                &keys.secret_access_key,
                None,
                None,
                "cdkd-options",
            ));
        }
        let mut sdk_config = loader.load().await;
        if sdk_config.region().is_none() {
            sdk_config = sdk_config
                .into_builder()
                .region(Region::from_static(FALLBACK_REGION))
                .build();
        }
        if let Some(role) = &options.role_arn {
            let assumed = aws_config::sts::AssumeRoleProvider::builder(role)
                .session_name("cdkd")
                .configure(&sdk_config)
                .build()
                .await;
            sdk_config = sdk_config
                .into_builder()
                .credentials_provider(
                    aws_credential_types::provider::SharedCredentialsProvider::new(assumed),
                )
                .build();
        }
        AwsEnvironment {
            sdk_config,
            s3_force_path_style: options.s3_force_path_style,
            cache_dir: options.cache_dir.clone().or_else(cache_dir),
        }
    }

    /// This environment with `role`'s credentials, assumed from this one's (lazily, on the
    /// first call, and refreshed before they expire): a cross-account read.
    pub async fn assuming(&self, role: &str) -> AwsEnvironment {
        let assumed = aws_config::sts::AssumeRoleProvider::builder(role)
            .session_name("cdkd-cross-account")
            .configure(&self.sdk_config)
            .build()
            .await;
        AwsEnvironment {
            sdk_config: self
                .sdk_config
                .clone()
                .into_builder()
                .credentials_provider(
                    aws_credential_types::provider::SharedCredentialsProvider::new(assumed),
                )
                .build(),
            s3_force_path_style: self.s3_force_path_style,
            cache_dir: self.cache_dir.clone(),
        }
    }

    /// The SDK configuration, for the host's own clients.
    pub fn sdk_config(&self) -> &SdkConfig {
        &self.sdk_config
    }

    /// The region to work in.
    pub fn region(&self) -> String {
        self.sdk_config
            .region()
            .map_or_else(|| FALLBACK_REGION.to_string(), ToString::to_string)
    }

    /// Where cached facts and registry schemas are kept (none: nothing is cached).
    pub fn cache_dir(&self) -> Option<PathBuf> {
        self.cache_dir.clone()
    }

    /// The endpoint override (`AWS_ENDPOINT_URL`), if any.
    pub fn endpoint_url(&self) -> Option<String> {
        self.sdk_config.endpoint_url().map(ToString::to_string)
    }

    /// Whether S3 is addressed path-style.
    pub fn s3_force_path_style(&self) -> bool {
        self.s3_force_path_style
    }

    /// Resolves credentials through the SDK's chain (cached by the SDK until they expire).
    pub async fn credentials(&self) -> Result<Credentials, CredentialsError> {
        let provider = self
            .sdk_config
            .credentials_provider()
            .ok_or_else(|| CredentialsError("no credential provider is configured".into()))?;
        let creds = provider
            .provide_credentials()
            .await
            .map_err(|err| CredentialsError(err.to_string()))?;
        Ok(Credentials {
            access_key_id: creds.access_key_id().to_string(),
            secret_access_key: creds.secret_access_key().to_string(),
            session_token: creds.session_token().map(ToString::to_string),
            expires_at_epoch_secs: creds.expiry().and_then(|at| {
                at.duration_since(std::time::UNIX_EPOCH)
                    .ok()
                    .map(|d| d.as_secs())
            }),
        })
    }
}

/// The AWS partition of a region.
pub fn partition(region: &str) -> &'static str {
    if region.starts_with("cn-") {
        "aws-cn"
    } else if region.starts_with("us-gov-") {
        "aws-us-gov"
    } else if region.starts_with("us-isob-") {
        "aws-iso-b"
    } else if region.starts_with("us-iso-") {
        "aws-iso"
    } else {
        "aws"
    }
}

/// The URL suffix of a region's partition (`AWS::URLSuffix`).
pub fn url_suffix(region: &str) -> &'static str {
    match partition(region) {
        "aws-cn" => "amazonaws.com.cn",
        "aws-iso" => "c2s.ic.gov",
        "aws-iso-b" => "sc2s.sgov.gov",
        _ => "amazonaws.com",
    }
}

/// `CDKD_CACHE_DIR`, else `$XDG_CACHE_HOME/cdkd`, else `~/.cache/cdkd`.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CDKD_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    // A relative XDG_CACHE_HOME is ignored, as the XDG spec says.
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from) {
        if dir.is_absolute() {
            return Some(dir.join("cdkd"));
        }
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache").join("cdkd"))
}
