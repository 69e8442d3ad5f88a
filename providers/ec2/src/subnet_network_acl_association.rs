//! `AWS::EC2::SubnetNetworkAclAssociation`: physical id is the association id. A subnet always
//! has an ACL: associating replaces the subnet's current association, and deleting one hands
//! the subnet back to its VPC's default ACL, as CloudFormation does.

use cdkd_aws_common::{aws_error, optional, put, require_str};
use cdkd_provider_api::protocol::DeleteResult;
use cdkd_provider_api::{async_trait, ErrorKind, ProviderError};
use serde_json::{json, Map, Value};

use crate::association::{Association, Pair};
use crate::{does_not_exist, filter, some_str};

/// `AWS::EC2::SubnetNetworkAclAssociation`.
pub(crate) type SubnetNetworkAclAssociation = Association<AclPair>;

/// The network ACL association's own calls.
pub(crate) struct AclPair;

async fn describe_acls(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    filters: &[(&str, &str)],
) -> Result<Vec<aws_sdk_ec2::types::NetworkAcl>, ProviderError> {
    let mut call = ec2.describe_network_acls();
    for (name, value) in filters {
        call = call.filters(filter(name, value));
    }
    Ok(optional(what, call.send().await)?
        .map(|out| out.network_acls().to_vec())
        .unwrap_or_default())
}

/// The ACL holding association `id`, with the association's subnet.
async fn find_association(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Option<(aws_sdk_ec2::types::NetworkAcl, String)>, ProviderError> {
    let acls = describe_acls(ec2, what, &[("association.association-id", id)]).await?;
    Ok(acls.into_iter().find_map(|acl| {
        let subnet = acl
            .associations()
            .iter()
            .find(|a| a.network_acl_association_id() == Some(id))?
            .subnet_id()?
            .to_string();
        Some((acl, subnet))
    }))
}

/// A subnet's one network ACL association.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Current {
    /// The association id.
    id: String,
    /// The ACL the subnet is associated with.
    acl: String,
}

/// `subnet`'s association among the described `acls`.
fn current_association(acls: &[aws_sdk_ec2::types::NetworkAcl], subnet: &str) -> Option<Current> {
    acls.iter().find_map(|acl| {
        let association = acl
            .associations()
            .iter()
            .find(|a| a.subnet_id() == Some(subnet))?;
        Some(Current {
            id: association.network_acl_association_id()?.to_string(),
            acl: acl.network_acl_id()?.to_string(),
        })
    })
}

/// Moves `subnet`'s association (`association`) to `acl`; returns the new association id.
async fn reassociate(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    association: &str,
    acl: &str,
) -> Result<String, ProviderError> {
    let out = ec2
        .replace_network_acl_association()
        .association_id(association)
        .network_acl_id(acl)
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: associating with {acl}"), e))?;
    out.new_association_id()
        .map(ToString::to_string)
        .ok_or_else(|| {
            ProviderError::new(
                ErrorKind::OTHER,
                format!("{what}: EC2 returned no association id"),
            )
        })
}

#[async_trait]
impl Pair for AclPair {
    const TYPE_NAME: &'static str = "AWS::EC2::SubnetNetworkAclAssociation";
    const ID_ATTRIBUTE: &'static str = "AssociationId";
    const PROPERTIES: &'static [&'static str] = &["NetworkAclId", "SubnetId"];

    async fn read(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        Ok(find_association(ec2, what, id).await?.map(|(acl, subnet)| {
            let mut props = Map::new();
            put(&mut props, "NetworkAclId", some_str(acl.network_acl_id()));
            props.insert("SubnetId".into(), json!(subnet));
            props
        }))
    }

    async fn create(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        properties: &Map<String, Value>,
    ) -> Result<String, ProviderError> {
        let acl = require_str(properties, "NetworkAclId", what)?;
        let subnet = require_str(properties, "SubnetId", what)?;
        let acls = describe_acls(ec2, what, &[("association.subnet-id", subnet)]).await?;
        let current = current_association(&acls, subnet).ok_or_else(|| {
            does_not_exist(what, &format!("the network ACL association of {subnet}"))
        })?;
        // A create retried after a crash finds the subnet already with the template's ACL:
        // that association is the create's, and replacing it again would only mint another id.
        if current.acl == acl {
            tracing::info!(
                "{what}: {subnet} is already associated with {acl} ({}); adopting it",
                current.id
            );
            Ok(current.id)
        } else {
            reassociate(ec2, what, &current.id, acl).await
        }
    }

    /// Hands the subnet back to its VPC's default ACL.
    async fn delete(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        id: &str,
    ) -> Result<DeleteResult, ProviderError> {
        let Some((acl, _subnet)) = find_association(ec2, what, id).await? else {
            return Ok(DeleteResult::Deleted);
        };
        if acl.is_default() == Some(true) {
            return Ok(DeleteResult::Deleted);
        }
        let vpc = acl.vpc_id().unwrap_or_default();
        let default = describe_acls(ec2, what, &[("vpc-id", vpc), ("default", "true")])
            .await?
            .first()
            .and_then(|a| a.network_acl_id().map(ToString::to_string))
            .ok_or_else(|| does_not_exist(what, &format!("the default network ACL of {vpc}")))?;
        cdkd_aws_common::deleted_unless_failed(
            reassociate(ec2, what, id, &default).await.map(|_| ()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ec2::types::{NetworkAcl, NetworkAclAssociation};

    #[test]
    fn the_subnets_association_names_its_acl() {
        let acl = |id: &str, subnet: &str, association: &str| {
            NetworkAcl::builder()
                .network_acl_id(id)
                .associations(
                    NetworkAclAssociation::builder()
                        .subnet_id(subnet)
                        .network_acl_association_id(association)
                        .build(),
                )
                .build()
        };
        let acls = [
            acl("acl-default", "subnet-9", "aclassoc-9"),
            acl("acl-1", "subnet-1", "aclassoc-1"),
        ];
        assert_eq!(
            current_association(&acls, "subnet-1"),
            Some(Current {
                id: "aclassoc-1".into(),
                acl: "acl-1".into()
            })
        );
        assert_eq!(current_association(&acls, "subnet-2"), None);
    }
}
