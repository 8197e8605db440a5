"""Stand-in package (see tests/standins/README.md)."""
TOOLDEC_STANDIN = True
