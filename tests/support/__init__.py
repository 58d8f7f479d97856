"""Shared test/benchmark support: an in-process moto S3 server and a
fault-injecting, request-counting HTTP proxy to put in front of it."""

from tests.support.proxy import (
    Delay,
    FaultAction,
    FaultRule,
    Hold,
    ProxyRequest,
    RequestRecord,
    Reset,
    S3Proxy,
    Stall,
    Status,
    TruncateBody,
    s3_error_body,
)
from tests.support.s3 import (
    MotoServer,
    make_bucket,
    put_objects,
    s3_storage_options,
    start_moto_server,
)

__all__ = [
    "Delay",
    "FaultAction",
    "FaultRule",
    "Hold",
    "MotoServer",
    "ProxyRequest",
    "RequestRecord",
    "Reset",
    "S3Proxy",
    "Stall",
    "Status",
    "TruncateBody",
    "make_bucket",
    "put_objects",
    "s3_error_body",
    "s3_storage_options",
    "start_moto_server",
]
