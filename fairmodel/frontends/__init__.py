"""Front ends: problem files and the command line."""
