"""How large the oracle's programs would be, estimated before they are built, and the memory budget."""
