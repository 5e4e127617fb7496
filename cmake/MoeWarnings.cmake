# Warnings for our own targets, and floating-point contraction off everywhere: an FMA changes a
# result's bits, and the reference must give the same bits on every machine and build.
add_compile_options(-Wall -Wextra -Wpedantic -ffp-contract=off)
