"""EdgeCron core: domain logic, data access and the API, shared by every Lambda function."""

__version__ = "0.1.0"
