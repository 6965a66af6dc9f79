"""The kernel glue the faces share: configuration, the kernel's manager, signals and ipykernel's internals."""
