"""`edgecron local`: the template's resources on moto and its handlers in-process, no Docker, no account."""
