"""AWS request limits that moto 5.2.5 does not enforce, checked on a call's parameters before moto sees
them, so code that would be refused by AWS is refused locally too, with the error AWS returns.

What moto already enforces is left to moto (tests/unit/test_local_limits.py shows each limit refused
in the test harness, whichever of the two refuses it):

- SQS: more than 10 entries in a SendMessageBatch, an empty batch, DelaySeconds above 900 (moto);
  more than 10 entries in a DeleteMessageBatch or ChangeMessageVisibilityBatch (here). A message
  or a batch above 256 KiB counted as SQS counts (UTF-8 bytes of the body plus each message
  attribute's name, type and value), and a negative DelaySeconds (here: moto counts characters of
  the body only, allows 1 MiB and accepts negative delays).
- DynamoDB: items above 400 KB, transactions of more than 100 items or touching one item twice
  (moto), BatchGetItem with the same key twice (moto). Transactions above 4 MB in total,
  BatchWriteItem with more than 25 requests or the same key twice (here).

- SNS Publish: a message above 256 KiB in UTF-8 bytes, a Subject with a line break or another
  control character (here: moto counts characters and allows any Subject up to 100 characters).

SQS raised its ceiling to 1 MiB per message in 2025 for queues that allow it; the emulator keeps
256 KiB, the long-standing default, so nothing that passes here is refused by a queue left at it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

SQS_MAX_MESSAGE_BYTES = 262_144  # 256 KiB: one message, and the sum of one batch's messages
SQS_MAX_DELAY_SEC = 900
DYNAMODB_MAX_TRANSACTION_BYTES = 4 * 1024 * 1024
DYNAMODB_MAX_BATCH_WRITE = 25


@dataclass(frozen=True)
class LimitError:
    """An error answer as AWS gives it: the error code botocore reports, its query code (SQS), the
    message, and the HTTP status."""

    code: str
    message: str
    query_code: str = ""
    status: int = 400
    sender_fault: bool = False

    def response(self) -> dict[str, Any]:
        error: dict[str, Any] = {"Code": self.code, "Message": self.message}
        if self.query_code:
            error["QueryErrorCode"] = self.query_code
        if self.query_code or self.sender_fault:
            error["Type"] = "Sender"
        return {"Error": error, "ResponseMetadata": {"HTTPStatusCode": self.status}}


KeyAttributes = Callable[[str], tuple[str, ...] | None]


def check(
    service: str, operation: str, params: dict[str, Any], key_attributes: KeyAttributes | None = None
) -> LimitError | None:
    """The error AWS would answer this call with because of a limit moto does not enforce, or None.
    `key_attributes` names a table's key attributes (to find a BatchWriteItem put's key)."""
    if service == "sqs":
        return _check_sqs(operation, params)
    if service == "dynamodb":
        return _check_dynamodb(operation, params, key_attributes or (lambda table: None))
    if service == "sns":
        return _check_sns(operation, params)
    return None


# SQS -------------------------------------------------------------------------------------------------


def _sqs_error(name: str, message: str) -> LimitError:
    return LimitError(f"AWS.SimpleQueueService.{name}", message, name)


def _invalid(message: str) -> LimitError:
    return LimitError("InvalidParameterValue", message, "InvalidParameterValue")


def message_bytes(body: Any, attributes: Any) -> int:
    """A message's size as SQS counts it: the body's UTF-8 bytes plus, for each message attribute,
    its name, data type and value."""
    size = _utf8_len(body)
    if isinstance(attributes, dict):
        for name, value in attributes.items():
            size += _utf8_len(name)
            if isinstance(value, dict):
                size += _utf8_len(value.get("DataType", ""))
                if "StringValue" in value:
                    size += _utf8_len(value["StringValue"])
                if "BinaryValue" in value:
                    size += _bytes_len(value["BinaryValue"])
    return size


def _too_big(size: int) -> LimitError:
    return _invalid(
        "One or more parameters are invalid. Reason: Message must be shorter than "
        f"{SQS_MAX_MESSAGE_BYTES} bytes."
    )


def _bad_delay(delay: Any) -> LimitError | None:
    if delay is None:
        return None
    try:
        value = int(delay)
    except (TypeError, ValueError):
        return _invalid(f"Value {delay} for parameter DelaySeconds is invalid. Reason: must be an integer.")
    if value < 0 or value > SQS_MAX_DELAY_SEC:
        return _invalid(
            f"Value {value} for parameter DelaySeconds is invalid. "
            f"Reason: DelaySeconds must be >= 0 and <= {SQS_MAX_DELAY_SEC}."
        )
    return None


def _check_sqs(operation: str, params: dict[str, Any]) -> LimitError | None:
    if operation == "SendMessage":
        size = message_bytes(params.get("MessageBody", ""), params.get("MessageAttributes"))
        if size > SQS_MAX_MESSAGE_BYTES:
            return _too_big(size)
        return _bad_delay(params.get("DelaySeconds"))
    if operation in ("DeleteMessageBatch", "ChangeMessageVisibilityBatch"):
        entries = params.get("Entries")
        if isinstance(entries, list) and len(entries) > 10:  # moto: a wrong BatchEntryIdsNotDistinct, or none
            return _sqs_error(
                "TooManyEntriesInBatchRequest",
                f"Maximum number of entries per request are 10. You have sent {len(entries)}.",
            )
        return None
    if operation == "SendMessageBatch":
        entries = params.get("Entries")
        if not isinstance(entries, list) or not 1 <= len(entries) <= 10:
            return None  # moto answers EmptyBatchRequest / TooManyEntriesInBatchRequest
        total = 0
        for entry in entries:
            if not isinstance(entry, dict):
                return None
            size = message_bytes(entry.get("MessageBody", ""), entry.get("MessageAttributes"))
            if size > SQS_MAX_MESSAGE_BYTES:
                return _too_big(size)
            total += size
        if total > SQS_MAX_MESSAGE_BYTES:
            return _sqs_error(
                "BatchRequestTooLong",
                f"Batch requests cannot be longer than {SQS_MAX_MESSAGE_BYTES} bytes. "
                f"You have sent {total} bytes.",
            )
    return None


def negative_delay_entries(params: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries of a SendMessageBatch whose DelaySeconds is negative, as `Failed` entries: SQS
    fails such an entry on its own (moto does so above 900, not below 0)."""
    failed = []
    for entry in params.get("Entries") or []:
        if (
            isinstance(entry, dict)
            and isinstance(entry.get("DelaySeconds"), int)
            and entry["DelaySeconds"] < 0
        ):
            error = _bad_delay(entry["DelaySeconds"])
            assert error is not None
            failed.append(
                {"Id": entry.get("Id"), "SenderFault": True, "Code": error.code, "Message": error.message}
            )
    return failed


# SNS -------------------------------------------------------------------------------------------------

SNS_MAX_MESSAGE_BYTES = 262_144


def _sns_invalid(message: str) -> LimitError:
    return LimitError("InvalidParameter", f"Invalid parameter: {message}", sender_fault=True)


def _check_sns(operation: str, params: dict[str, Any]) -> LimitError | None:
    if operation != "Publish" or params.get("PhoneNumber"):
        return None
    if message_bytes(params.get("Message", ""), params.get("MessageAttributes")) > SNS_MAX_MESSAGE_BYTES:
        return _sns_invalid("Message too long")
    subject = params.get("Subject")
    if isinstance(subject, str) and any(ord(c) < 32 or ord(c) == 127 for c in subject):
        return _sns_invalid("Subject")  # no line breaks or control characters
    return None


# DynamoDB --------------------------------------------------------------------------------------------


def _validation(message: str) -> LimitError:
    return LimitError("ValidationException", message)


def attribute_value_bytes(value: Any) -> int:
    """An AttributeValue's size as DynamoDB counts it (docs: "Item sizes and formats")."""
    if not isinstance(value, dict) or len(value) != 1:
        return 0
    ((kind, inner),) = value.items()
    if kind == "S":
        return _utf8_len(inner)
    if kind == "N":
        return _number_bytes(inner)
    if kind == "B":
        return _bytes_len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(_utf8_len(v) for v in inner or [])
    if kind == "NS":
        return sum(_number_bytes(v) for v in inner or [])
    if kind == "BS":
        return sum(_bytes_len(v) for v in inner or [])
    if kind == "L":
        return 3 + sum(1 + attribute_value_bytes(v) for v in inner or [])
    if kind == "M":
        return 3 + sum(1 + _utf8_len(k) + attribute_value_bytes(v) for k, v in (inner or {}).items())
    return 0


def item_bytes(item: Any) -> int:
    """An item's size: each attribute's name (UTF-8) plus its value."""
    if not isinstance(item, dict):
        return 0
    return sum(_utf8_len(name) + attribute_value_bytes(value) for name, value in item.items())


def _number_bytes(text: Any) -> int:
    """About one byte per two significant digits, plus one (DynamoDB's rule for numbers)."""
    try:
        digits = Decimal(str(text)).normalize().as_tuple().digits
    except InvalidOperation:
        return _utf8_len(text)
    return (len(digits) + 1) // 2 + 1


def _transaction_item_bytes(entry: Any) -> int:
    """What one TransactWriteItems entry adds to the request's size: a Put its item, the others their
    key and expression values."""
    if not isinstance(entry, dict) or len(entry) != 1:
        return 0
    ((kind, op),) = entry.items()
    if not isinstance(op, dict):
        return 0
    if kind == "Put":
        return item_bytes(op.get("Item"))
    values = op.get("ExpressionAttributeValues") or {}
    return item_bytes(op.get("Key")) + sum(attribute_value_bytes(v) for v in values.values())


def _key_id(table: Any, key: Any) -> str:
    return json.dumps([table, key], sort_keys=True, default=repr)


def _check_dynamodb(
    operation: str, params: dict[str, Any], key_attributes: KeyAttributes
) -> LimitError | None:
    if operation == "TransactWriteItems":
        entries = params.get("TransactItems")
        if isinstance(entries, list) and len(entries) <= 100:  # above 100: moto's own error
            total = sum(_transaction_item_bytes(entry) for entry in entries)
            if total > DYNAMODB_MAX_TRANSACTION_BYTES:
                return _validation(
                    f"Transaction request cannot be larger than 4 MB (the items add up to {total} bytes)"
                )
        return None
    if operation == "BatchWriteItem":
        requests = params.get("RequestItems")
        if not isinstance(requests, dict):
            return None
        count = sum(len(ops) for ops in requests.values() if isinstance(ops, list))
        if count > DYNAMODB_MAX_BATCH_WRITE:
            return _validation(
                "1 validation error detected: Value at 'requestItems' failed to satisfy constraint: "
                f"Map value must satisfy constraint: [Member must have length less than or equal to "
                f"{DYNAMODB_MAX_BATCH_WRITE}, Member must have length greater than or equal to 1]"
            )
        seen: set[str] = set()
        for table, ops in requests.items():
            for op in ops if isinstance(ops, list) else []:
                put = op.get("PutRequest") if isinstance(op, dict) else None
                delete = op.get("DeleteRequest") if isinstance(op, dict) else None
                if isinstance(delete, dict):
                    key_id = _key_id(table, delete.get("Key"))
                elif isinstance(put, dict) and isinstance(put.get("Item"), dict):
                    names = key_attributes(table) or ()
                    key_id = _key_id(table, {n: put["Item"].get(n) for n in names}) if names else ""
                else:
                    continue
                if not key_id:
                    continue
                if key_id in seen:
                    return _validation("Provided list of item keys contains duplicates")
                seen.add(key_id)
        return None
    return None


# sizes -----------------------------------------------------------------------------------------------


def _utf8_len(text: Any) -> int:
    return len(text.encode("utf-8")) if isinstance(text, str) else len(str(text).encode("utf-8"))


def _bytes_len(value: Any) -> int:
    if isinstance(value, bytes | bytearray):
        return len(value)
    return _utf8_len(value)
