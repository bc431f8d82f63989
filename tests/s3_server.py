"""A real S3-protocol server on loopback for the tests and the bench: moto's standalone server
(``python -m moto.server``), one subprocess on a free port, started and stopped by its PID."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import free_port

REGION = "us-east-1"
ACCESS_KEY = "testing-access-key"
SECRET_KEY = "testing-secret-key"  # moto accepts any credentials


@dataclass
class S3Server:
    log_path: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    buckets: list[str] = field(default_factory=list)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30) -> S3Server:
        if not self.port:
            self.port = free_port()
        env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, env=env,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"moto server exited: {self.log_path.read_text()}")
            try:
                httpx.get(f"{self.endpoint}/moto-api/", timeout=1)
                return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("moto server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)

    def new_bucket(self) -> str:
        name = f"tms-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        self.buckets.append(name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> dict[str, int]:
        """Every key in the bucket (under ``prefix``) with its size."""
        found: dict[str, int] = {}
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        for page in pages:
            for item in page.get("Contents", []):
                found[item["Key"]] = item["Size"]
        return found

    def env(self, bucket: str, prefix: str = "tms", **extra: str) -> dict[str, str]:
        """The environment of a ``tms`` server or command using this bucket."""
        return {
            "TMS_ATTACHMENTS_STORE": "s3",
            "TMS_ATTACHMENTS_S3_ENDPOINT": self.endpoint,
            "TMS_ATTACHMENTS_S3_BUCKET": bucket,
            "TMS_ATTACHMENTS_S3_PREFIX": prefix,
            "TMS_ATTACHMENTS_S3_REGION": REGION,
            "TMS_ATTACHMENTS_S3_ACCESS_KEY_ID": ACCESS_KEY,
            "TMS_ATTACHMENTS_S3_SECRET_ACCESS_KEY": SECRET_KEY,
            **extra,
        }
