"""A Cloud Control API for moto, driven by moto's own CloudFormation resource models.

moto has no Cloud Control API. This module answers the JSON 1.0 calls
(`X-Amz-Target: CloudApiService.<Action>`) in the same process as moto, so a resource created
here is visible through the ordinary service API on the same port. Operations run when they are
requested; their progress events report IN_PROGRESS until `operation_ms` has passed (0 by
default: the first status poll already sees SUCCESS or FAILED), like the real, asynchronous
service.

As on AWS, the model of a finished create or update holds only the desired properties that were
sent (after the patch, for an update) and the type's primary identifier; GetResource and
ListResources answer the full model, read-only attributes included. A client token names one
request: sent again with the same operation and type, it answers that request's progress event;
sent with another operation or type, it is refused with ClientTokenConflictException.

GetResource reads the service for the types in LIVE_READERS (a change or a delete made through
the service API shows, as on AWS); for other types it answers the model as last written, so a
resource of such a type deleted behind Cloud Control's back is still found. Not modelled: type
schemas (DescribeType lives in CloudFormation), hooks, cancellation.
"""

import json
import threading
import time
import uuid

import jsonpatch
from moto.cloudformation import parsing

from registry import Registry, provisioning_type
from moto.core.exceptions import JsonRESTError, ServiceException

# Attribute names tried on every model, beyond the primary identifier; a model answers the ones
# its `has_cfn_attr` knows. Enough for the types cdkd's tests provision through Cloud Control.
ATTRIBUTE_CANDIDATES = [
    "Arn", "Id", "Name", "QueueName", "QueueUrl", "TopicArn", "TopicName", "TableName",
    "StreamArn", "LogGroupName", "RoleId", "GroupId", "VpcId", "KeyId", "DomainName",
    "RegionalDomainName", "WebsiteURL", "Endpoint.Address", "Endpoint.Port", "ProviderName",
    "DBClusterArn", "DBClusterResourceId", "ReadEndpoint.Address",
    "LatestVersionNumber", "DefaultVersionNumber",  # a launch template's, for an Auto Scaling group
]

# The primary identifier property of each type (its registry schema's `primaryIdentifier`), for
# the types cdkd's tests provision through Cloud Control. The final progress event's model holds
# it, valued with the request's identifier. A type not listed here (an unknown one, or one whose
# identifier is composite, such as AWS::EC2::Route) gets the desired properties alone.
PRIMARY_IDENTIFIERS = {
    "AWS::DynamoDB::Table": "TableName",
    "AWS::EC2::InternetGateway": "InternetGatewayId",
    "AWS::EC2::NatGateway": "NatGatewayId",
    "AWS::EC2::RouteTable": "RouteTableId",
    "AWS::EC2::SecurityGroup": "Id",  # the group id in a VPC; GroupId is a read-only attribute
    "AWS::EC2::Subnet": "SubnetId",
    "AWS::EC2::Volume": "VolumeId",
    "AWS::EC2::VPC": "VpcId",
    "AWS::Events::Rule": "Arn",
    "AWS::IAM::InstanceProfile": "InstanceProfileName",
    "AWS::IAM::ManagedPolicy": "PolicyArn",
    "AWS::IAM::Role": "RoleName",
    "AWS::IAM::User": "UserName",
    "AWS::KMS::Alias": "AliasName",
    "AWS::KMS::Key": "KeyId",
    "AWS::Lambda::EventSourceMapping": "Id",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::RDS::DBCluster": "DBClusterIdentifier",
    "AWS::RDS::DBInstance": "DBInstanceIdentifier",
    "AWS::S3::Bucket": "BucketName",
    "AWS::SNS::Subscription": "SubscriptionArn",
    "AWS::SNS::Topic": "TopicArn",
    "AWS::SQS::Queue": "QueueUrl",
    "AWS::SQS::QueuePolicy": "Id",
    "AWS::SSM::Parameter": "Name",
}

# Types whose moto physical id is not the primary identifier's value: the model attribute that
# is (moto names a rule by its name; Cloud Control by its ARN).
IDENTIFIER_ATTRIBUTES = {"AWS::Events::Rule": "Arn"}

CLIENT_TOKEN_CONFLICT = "The specified client token has already been used in another resource request."

# moto raises these for requests a real handler would refuse; mapped to Cloud Control's
# HandlerErrorCode values.
ERROR_CODES = {
    "ResourceNotFoundException": "NotFound",
    "DBInstanceNotFound": "NotFound",
    "DBClusterNotFoundFault": "NotFound",
    "InvalidVolume.NotFound": "NotFound",
    "NoSuchEntity": "NotFound",
    "NoSuchBucket": "NotFound",
    "QueueDoesNotExist": "NotFound",
    "ResourceInUseException": "AlreadyExists",
    "EntityAlreadyExists": "AlreadyExists",
    "BucketAlreadyExists": "AlreadyExists",
    "QueueAlreadyExists": "AlreadyExists",
    "ResourceAlreadyExistsException": "AlreadyExists",
    "DBInstanceAlreadyExists": "AlreadyExists",
    "ValidationException": "InvalidRequest",
    "ValidationError": "InvalidRequest",
    "InvalidParameterValue": "InvalidRequest",
    "InvalidParameterException": "InvalidRequest",
    "InvalidParameterValueException": "InvalidRequest",
}


class ApiError(Exception):
    """A 400 answer of the Cloud Control API itself (not a failed operation)."""

    def __init__(self, code, message, status=400):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


class CloudControl:
    """The Cloud Control request tracker and resource store; one per emulator."""

    def __init__(self, operation_ms=0):
        self.operation_ms = operation_ms
        # (type, operation) -> ms a request stays IN_PROGRESS at least (timing.py's profile).
        self.duration_ms = None
        self._lock = threading.RLock()
        self.reset()

    def reset(self):
        with self._lock:
            self._requests = {}        # request token -> progress event (with private fields)
            self._client_tokens = {}   # client token -> request token
            self._resources = {}       # (type, identifier) -> {"model", "properties"}

    # -- dispatch ---------------------------------------------------------------------------

    def handle(self, action, body, account_id, region):
        handler = {
            "CreateResource": self._create,
            "UpdateResource": self._update,
            "DeleteResource": self._delete,
            "GetResourceRequestStatus": self._status,
            "GetResource": self._get,
            "ListResources": self._list,
            "ListResourceRequests": self._list_requests,
        }.get(action)
        if handler is None:
            raise ApiError("UnsupportedActionException", f"the emulator does not implement {action}")
        with self._lock:
            return handler(body, account_id, region)

    # -- operations -------------------------------------------------------------------------

    def _create(self, body, account_id, region):
        type_name = _required(body, "TypeName")
        desired = json.loads(_required(body, "DesiredState"))
        replay = self._replayed(body, "CREATE", type_name)
        if replay:
            return replay
        _refuse_unprovisionable(type_name, region)
        model_class = _model_class(type_name)
        identifier, model, error = None, None, None
        try:
            name = _physical_name(type_name, desired)
            model = model_class.create_from_cloudformation_json(
                name, {"Properties": dict(desired)}, account_id, region,
                LogicalId="CloudControl", StackId="", ResourceType=type_name,
            )
            identifier = _identifier_of(type_name, model)
            self._resources[(type_name, identifier)] = {"model": model, "properties": desired}
        except Exception as err:  # moto raises many types; each becomes a FAILED event
            error = err
        return self._record(body, "CREATE", type_name, identifier, model, desired, error)

    def _update(self, body, account_id, region):
        type_name = _required(body, "TypeName")
        identifier = _required(body, "Identifier")
        patch = json.loads(_required(body, "PatchDocument"))
        replay = self._replayed(body, "UPDATE", type_name)
        if replay:
            return replay
        entry = self._find(type_name, identifier, account_id, region)
        model, desired, error = entry["model"], entry["properties"], None
        try:
            desired = jsonpatch.apply_patch(entry["properties"], patch)
            _refuse_create_only_changes(type_name, entry["properties"], desired, region)
            model_class = _model_class(type_name)
            if hasattr(model_class.update_from_cloudformation_json, "__isabstractmethod__"):
                raise _Failure("NotUpdatable", f"the emulator cannot update {type_name}")
            model = model_class.update_from_cloudformation_json(
                original_resource=entry["model"],
                new_resource_name=_physical_name(
                    type_name, desired, fallback=str(entry["model"].physical_resource_id)),
                cloudformation_json={"Properties": dict(desired)},
                account_id=account_id,
                region_name=region,
            )
            del self._resources[(type_name, identifier)]
            identifier = _identifier_of(type_name, model)
            self._resources[(type_name, identifier)] = {"model": model, "properties": desired}
        except jsonpatch.JsonPatchException as err:
            error = _Failure("InvalidRequest", f"patch does not apply: {err}")
        except Exception as err:
            error = err
        return self._record(body, "UPDATE", type_name, identifier, model, desired, error)

    def _delete(self, body, account_id, region):
        type_name = _required(body, "TypeName")
        identifier = _required(body, "Identifier")
        replay = self._replayed(body, "DELETE", type_name)
        if replay:
            return replay
        entry = self._resources.get((type_name, identifier))
        error = None
        if entry is None:
            error = _Failure("NotFound", f"{type_name} {identifier} not found")
        else:
            try:
                _delete_model(type_name, entry, account_id, region)
                del self._resources[(type_name, identifier)]
            except Exception as err:
                error = err
        return self._record(body, "DELETE", type_name, identifier, None, None, error)

    def _status(self, body, _account_id, _region):
        token = _required(body, "RequestToken")
        event = self._requests.get(token)
        if event is None:
            raise ApiError("RequestTokenNotFoundException", f"request token {token} not found")
        return {"ProgressEvent": _public(event, self.operation_ms), "HooksProgressEvent": []}

    def _get(self, body, account_id, region):
        type_name = _required(body, "TypeName")
        identifier = _required(body, "Identifier")
        entry = self._find(type_name, identifier, account_id, region)
        document = self._read(type_name, identifier, entry)
        if document is None:
            raise ApiError("ResourceNotFoundException", f"{type_name} with identifier {identifier} not found")
        return {
            "TypeName": type_name,
            "ResourceDescription": {"Identifier": identifier, "Properties": json.dumps(document)},
        }

    def _list(self, body, _account_id, _region):
        type_name = _required(body, "TypeName")
        descriptions = []
        for (kind, identifier), entry in sorted(self._resources.items(), key=lambda kv: kv[0]):
            if kind != type_name:
                continue
            document = self._read(type_name, identifier, entry)
            if document is not None:
                descriptions.append({"Identifier": identifier, "Properties": json.dumps(document)})
        return {"TypeName": type_name, "ResourceDescriptions": descriptions}

    def _list_requests(self, _body, _account_id, _region):
        summaries = [_public(event, self.operation_ms) for event in self._requests.values()]
        return {"ResourceRequestStatusSummaries": summaries}

    # -- helpers ----------------------------------------------------------------------------

    def _read(self, type_name, identifier, entry):
        """The full model of a resource, read from its service for the LIVE_READERS types;
        None (and forgotten) when it was deleted through the service's own API."""
        document = _resource_model(type_name, entry["model"], entry["properties"], identifier)
        reader = LIVE_READERS.get(type_name)
        if reader is not None:
            live = reader(entry["model"])
            if live is None:
                del self._resources[(type_name, identifier)]
                return None
            document.update(live)
        return document

    def _find(self, type_name, identifier, account_id=None, region=None):
        entry = self._resources.get((type_name, identifier))
        adopter = ADOPTERS.get(type_name)
        if entry is None and adopter is not None and account_id:
            # Made through the service's own API: Cloud Control reads it all the same.
            found = adopter(identifier, account_id, region)
            if found is not None:
                entry = {"model": found[0], "properties": found[1]}
                self._resources[(type_name, identifier)] = entry
        if entry is None:
            raise ApiError("ResourceNotFoundException", f"{type_name} with identifier {identifier} not found")
        return entry

    def _replayed(self, body, operation, type_name):
        """The answer to a request whose client token is already known, or None.

        The same operation on the same type gets the original request's progress event (nothing
        runs again); another operation or type gets ClientTokenConflictException, as on AWS.
        """
        token = body.get("ClientToken")
        if token and token in self._client_tokens:
            event = self._requests[self._client_tokens[token]]
            if event["Operation"] != operation or event["TypeName"] != type_name:
                raise ApiError("ClientTokenConflictException", CLIENT_TOKEN_CONFLICT)
            return {"ProgressEvent": _public(event, self.operation_ms, initial=True)}
        return None

    def _record(self, body, operation, type_name, identifier, model, desired, error):
        token = str(uuid.uuid4())
        event = {
            "TypeName": type_name,
            "RequestToken": token,
            "Operation": operation,
            "EventTime": time.time(),
            "_started": time.monotonic(),
        }
        if self.duration_ms is not None:
            event["_duration_ms"] = self.duration_ms(type_name, operation)
        if identifier:
            event["Identifier"] = identifier
        if error is None:
            event["_final"] = "SUCCESS"
            if model is not None:
                event["ResourceModel"] = json.dumps(_final_model(type_name, desired, identifier))
        else:
            code, message = _failure_of(error)
            event["_final"] = "FAILED"
            event["ErrorCode"] = code
            event["StatusMessage"] = message
        self._requests[token] = event
        if body.get("ClientToken"):
            self._client_tokens[body["ClientToken"]] = token
        return {"ProgressEvent": _public(event, self.operation_ms, initial=True)}


class _Failure(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def _required(body, key):
    value = body.get(key)
    if value in (None, ""):
        raise ApiError("ValidationException", f"{key} is required")
    return value


class _SnsSubscription:
    """`AWS::SNS::Subscription`, which moto's CloudFormation has no model for: subscribe on
    create, unsubscribe on delete; the identifier (and `Ref`) is the subscription ARN."""

    def __init__(self, arn, account_id, region):
        self.physical_resource_id = arn
        self._account_id, self._region = account_id, region

    @staticmethod
    def has_cfn_attr(attribute):
        return attribute == "Arn"

    def get_cfn_attribute(self, attribute):
        if attribute == "Arn":
            return self.physical_resource_id
        raise KeyError(attribute)

    @classmethod
    def create_from_cloudformation_json(cls, _name, json, account_id, region, **_kw):
        from moto.sns.models import sns_backends
        properties = json["Properties"]
        backend = sns_backends[account_id][properties.get("Region") or region]
        subscription = backend.subscribe(
            properties["TopicArn"], properties["Endpoint"], properties["Protocol"]
        )
        if properties.get("FilterPolicy"):
            import json as _json
            backend.set_subscription_attributes(
                subscription.arn, "FilterPolicy", _json.dumps(properties["FilterPolicy"])
            )
        return cls(subscription.arn, account_id, region)

    def delete(self, account_id, region):
        from moto.sns.models import sns_backends
        sns_backends[account_id][self._region].unsubscribe(self.physical_resource_id)

    @staticmethod
    def update_from_cloudformation_json(**_kw):
        raise _Failure("NotUpdatable", "the emulator cannot update AWS::SNS::Subscription")


def _flag(value, default):
    """A template boolean ("true", true, absent) as a bool."""
    if value is None:
        return default
    return value if isinstance(value, bool) else str(value).lower() == "true"


def _integer(value):
    return None if value in (None, "") else int(value)


def _delete_automated_cluster_snapshots(backend, cluster_identifier):
    for name, snapshot in list(backend.cluster_snapshots.items()):
        if snapshot.snapshot_type == "automated" and snapshot.cluster.db_cluster_identifier == cluster_identifier:
            backend.delete_db_cluster_snapshot(name)


class _RdsDBCluster:
    """`AWS::RDS::DBCluster`, which moto's CloudFormation has no model for: created through
    moto's RDS backend; deleted as Cloud Control's handler does, without a final snapshot (only
    CloudFormation's `DeletionPolicy: Snapshot` asks for one; a caller takes it beforehand) and
    with the cluster's automated backups (AWS's `DeleteAutomatedBackups` default; moto's
    DeleteDBCluster keeps them). The identifier (and `Ref`) is the DBClusterIdentifier."""

    # Template property -> moto's DBCluster argument, with a conversion for template strings.
    PROPERTIES = {
        "Engine": ("engine", str),
        "EngineVersion": ("engine_version", str),
        "EngineMode": ("engine_mode", str),
        "MasterUsername": ("master_username", str),
        "MasterUserPassword": ("master_user_password", str),
        "DatabaseName": ("database_name", str),
        "Port": ("port", _integer),
        "AllocatedStorage": ("allocated_storage", _integer),
        "Iops": ("iops", _integer),
        "StorageType": ("storage_type", str),
        "BackupRetentionPeriod": ("backup_retention_period", _integer),
        "PreferredBackupWindow": ("preferred_backup_window", str),
        "PreferredMaintenanceWindow": ("preferred_maintenance_window", str),
        "DBClusterParameterGroupName": ("db_cluster_parameter_group_name", str),
        "DBSubnetGroupName": ("db_subnet_group_name", str),
        "DBClusterInstanceClass": ("db_cluster_instance_class", str),
        "VpcSecurityGroupIds": ("vpc_security_group_ids", list),
        "AvailabilityZones": ("availability_zones", list),
        "StorageEncrypted": ("storage_encrypted", lambda v: _flag(v, False)),
        "KmsKeyId": ("kms_key_id", str),
        "DeletionProtection": ("deletion_protection", lambda v: _flag(v, False)),
        "CopyTagsToSnapshot": ("copy_tags_to_snapshot", lambda v: _flag(v, False)),
        "Tags": ("tags", list),
    }

    ATTRIBUTES = {
        "DBClusterArn": lambda c: c.db_cluster_arn,
        "DBClusterResourceId": lambda c: c.db_cluster_resource_id,
        "Endpoint.Address": lambda c: c.endpoint,
        "Endpoint.Port": lambda c: str(c.port),
        "ReadEndpoint.Address": lambda c: c.reader_endpoint,
    }

    def __init__(self, cluster):
        self.cluster = cluster
        self.physical_resource_id = cluster.db_cluster_identifier

    @classmethod
    def has_cfn_attr(cls, attribute):
        return attribute in cls.ATTRIBUTES

    def get_cfn_attribute(self, attribute):
        if attribute in self.ATTRIBUTES:
            return self.ATTRIBUTES[attribute](self.cluster)
        raise KeyError(attribute)

    @classmethod
    def create_from_cloudformation_json(cls, name, json, account_id, region, **_kw):
        from moto.rds.models import rds_backends
        properties = json["Properties"]
        backend = rds_backends[account_id][region]
        # RDS keeps identifiers in lower case; a generated one is made from the logical id.
        identifier = (properties.get("DBClusterIdentifier") or name).lower()
        if identifier in backend.clusters:
            raise _Failure("AlreadyExists", f"DBClusterAlreadyExistsFault: DB cluster {identifier} already exists")
        kwargs = {"db_cluster_identifier": identifier}
        for key, (argument, convert) in cls.PROPERTIES.items():
            if properties.get(key) is not None:
                kwargs[argument] = convert(properties[key])
        return cls(backend.create_db_cluster(kwargs))

    def delete(self, _account_id, _region):
        backend = self.cluster.backend
        identifier = self.cluster.db_cluster_identifier
        backend.delete_db_cluster(cluster_identifier=identifier, snapshot_name=None)
        _delete_automated_cluster_snapshots(backend, identifier)

    @staticmethod
    def update_from_cloudformation_json(**_kw):
        raise _Failure("NotUpdatable", "the emulator cannot update AWS::RDS::DBCluster")


# Types moto's CloudFormation has no model for, modelled here.
EXTRA_MODELS = {"AWS::SNS::Subscription": _SnsSubscription, "AWS::RDS::DBCluster": _RdsDBCluster}


def _delete_db_instance(model, properties):
    # As Cloud Control's handler: no final snapshot (CloudFormation asks for one only for
    # `DeletionPolicy: Snapshot`), automated backups removed unless the template keeps them.
    # Manual snapshots stay, as on AWS.
    model.backend.delete_db_instance(
        model.db_instance_identifier,
        skip_final_snapshot=True,
        delete_automated_backups=_flag(properties.get("DeleteAutomatedBackups"), True),
    )


def _delete_volume(model, _properties):
    # moto's Volume model has no delete; DeleteVolume takes no snapshot, as on AWS.
    model.ec2_backend.delete_volume(model.id)


# Types whose moto model deletes otherwise than Cloud Control's handler (or not at all): deleted
# here, through the service backend.
DELETERS = {"AWS::RDS::DBInstance": _delete_db_instance, "AWS::EC2::Volume": _delete_volume}


_REGISTRY = None

# Conditionally create-only properties the service's handler can never change in place (so
# CloudFormation replaces the resource): AWS answers NotUpdatable for these as well.
HANDLER_NOT_UPDATABLE = {"AWS::DynamoDB::Table": ["KeySchema"]}


def _refuse_create_only_changes(type_name, before, after, region):
    """As AWS: an update that changes a create-only property fails with NotUpdatable."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = Registry()
    schema = _REGISTRY.schema_of(type_name, region) or {}
    names = [p[len("/properties/"):] for p in schema.get("createOnlyProperties", [])
             if p.startswith("/properties/") and "/" not in p[len("/properties/"):]]
    names += HANDLER_NOT_UPDATABLE.get(type_name, [])
    changed = [name for name in names if before.get(name) != after.get(name)]
    if changed:
        pointers = ", ".join(f"/properties/{name}" for name in changed)
        raise _Failure("NotUpdatable", f"Invalid patch update: createOnlyProperties [{pointers}] cannot be updated")


def _read_queue(model):
    """An SQS queue as GetResource reports it, read from moto's SQS backend (None: deleted)."""
    from moto.sqs.models import sqs_backends
    queue = sqs_backends[model.account_id][model.region].queues.get(model.name)
    if queue is None:
        return None
    live = {
        "VisibilityTimeout": int(queue.visibility_timeout),
        "MessageRetentionPeriod": int(queue.message_retention_period),
        "DelaySeconds": int(queue.delay_seconds),
        "MaximumMessageSize": int(queue.maximum_message_size),
        "ReceiveMessageWaitTimeSeconds": int(queue.receive_message_wait_time_seconds),
    }
    if queue.tags:
        live["Tags"] = [{"Key": k, "Value": v} for k, v in sorted(queue.tags.items())]
    return live


def _read_topic(model):
    """An SNS topic as GetResource reports it (None: deleted)."""
    topic = model.sns_backend.topics.get(model.arn)
    if topic is None:
        return None
    live = {"TopicArn": topic.arn, "TopicName": topic.name}
    if topic.display_name:
        live["DisplayName"] = topic.display_name
    return live


def _adopt_queue(queue_url, account_id, region):
    """The model and properties of a queue made outside Cloud Control, by its URL."""
    from moto.sqs.models import sqs_backends
    name = queue_url.rstrip("/").rsplit("/", 1)[-1]
    queue = sqs_backends[account_id][region].queues.get(name)
    return None if queue is None else (queue, {"QueueName": name})


def _adopt_topic(topic_arn, account_id, region):
    """A topic made outside Cloud Control, by its ARN."""
    from moto.sns.models import sns_backends
    topic = sns_backends[account_id][region].topics.get(topic_arn)
    return None if topic is None else (topic, {"TopicName": topic.name})


def _adopt_parameter(name, account_id, region):
    """An SSM parameter made outside Cloud Control, by its name."""
    from moto.ssm.models import ssm_backends
    parameter = ssm_backends[account_id][region].get_parameter(name)
    if parameter is None:
        return None
    return parameter, {"Name": parameter.name, "Type": parameter.parameter_type, "Value": parameter.value}


# Types whose resources made through the service's own API (or by a CloudFormation stack)
# Cloud Control finds too, by their primary identifier.
ADOPTERS = {
    "AWS::SQS::Queue": _adopt_queue,
    "AWS::SNS::Topic": _adopt_topic,
    "AWS::SSM::Parameter": _adopt_parameter,
}

# Types whose GetResource reads the service, so that out-of-band changes and deletes show.
LIVE_READERS = {"AWS::SQS::Queue": _read_queue, "AWS::SNS::Topic": _read_topic}


def _refuse_unprovisionable(type_name, region):
    # Cloud Control provisions only types whose registry schema has create and read handlers:
    # AWS::SQS::QueuePolicy, AWS::SNS::TopicPolicy, AWS::EC2::NetworkAclEntry, AWS::IAM::Policy
    # … are refused on AWS, where moto's CloudFormation models would have made them.
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = Registry()
    schema = _REGISTRY.schema_of(type_name, region)
    if schema is not None and provisioning_type(schema) == "NON_PROVISIONABLE":
        raise ApiError("UnsupportedActionException",
                       f"Resource type {type_name} does not support CREATE action")


def _model_class(type_name):
    model_class = EXTRA_MODELS.get(type_name) or parsing.resource_class_from_type(type_name)
    if model_class is None:
        raise ApiError("TypeNotFoundException", f"the emulator has no model for {type_name}")
    return model_class


def _physical_name(type_name, desired, fallback=None):
    name_property = parsing.resource_name_property_from_type(type_name)
    if name_property and desired.get(name_property):
        return desired[name_property]
    if fallback:
        return fallback
    # Cloud Control generates a name when the template gives none; mimic CloudFormation's shape.
    return parsing.generate_resource_name(type_name, "CloudControl", "Resource")


def _delete_model(type_name, entry, account_id, region):
    model = entry["model"]
    if type_name in DELETERS:
        DELETERS[type_name](model, entry["properties"] or {})
        return
    try:
        model.delete(account_id, region)
    except (TypeError, AttributeError, NotImplementedError):
        model_class = _model_class(type_name)
        if hasattr(model_class.delete_from_cloudformation_json, "__isabstractmethod__"):
            raise _Failure("NotUpdatable", f"the emulator cannot delete {type_name}")
        model_class.delete_from_cloudformation_json(
            str(model.physical_resource_id), {"Properties": dict(entry["properties"])}, account_id, region
        )


def _identifier_of(type_name, model):
    """The Cloud Control identifier of a new model: its primary identifier's value."""
    attribute = IDENTIFIER_ATTRIBUTES.get(type_name)
    if attribute:
        return str(model.get_cfn_attribute(attribute))
    return str(model.physical_resource_id)


def _final_model(type_name, properties, identifier):
    """The model a finished create or update reports: the desired properties as sent and the
    primary identifier, no read-only attribute (AWS reads those only in GetResource)."""
    document = dict(properties or {})
    name = PRIMARY_IDENTIFIERS.get(type_name)
    if name and identifier:
        document[name] = identifier
    return document


def _resource_model(type_name, model, properties, identifier):
    """The full model GetResource and ListResources answer: the desired properties, every
    attribute moto's model answers, and the primary identifier."""
    document = dict(properties or {})
    if model is None:
        return document
    for attribute in ATTRIBUTE_CANDIDATES:
        try:
            if type(model).has_cfn_attr(attribute):
                value = model.get_cfn_attribute(attribute)
                if value is not None:
                    document[attribute] = value
        except Exception:
            continue
    return _final_model(type_name, document, identifier)


def _failure_of(error):
    if isinstance(error, _Failure):
        return error.code, error.message
    if isinstance(error, ApiError):
        return "InvalidRequest", error.message
    if isinstance(error, ServiceException):
        return ERROR_CODES.get(error.code, "GeneralServiceException"), str(error)
    if isinstance(error, JsonRESTError) or hasattr(error, "error_type"):
        code = (getattr(error, "error_type", "") or type(error).__name__).split("#")[-1]
        return ERROR_CODES.get(code, "GeneralServiceException"), f"{code}: {getattr(error, 'message', error)}"
    return "GeneralServiceException", f"{type(error).__name__}: {error}"


def _public(event, operation_ms, initial=False):
    """The event as the API shows it now: IN_PROGRESS until the operation's time has passed."""
    public = {k: v for k, v in event.items() if not k.startswith("_")}
    elapsed_ms = (time.monotonic() - event["_started"]) * 1000
    if initial or elapsed_ms < max(operation_ms, event.get("_duration_ms") or 0):
        public["OperationStatus"] = "IN_PROGRESS"
        public.pop("ResourceModel", None)
        public.pop("ErrorCode", None)
        public.pop("StatusMessage", None)
    else:
        public["OperationStatus"] = event["_final"]
    return public
