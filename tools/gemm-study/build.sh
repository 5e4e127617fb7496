#!/bin/sh
# Builds one binary per backend from gemmbench.cpp (never link two BLAS libs into one binary).
set -e
cd "$(dirname "$0")"
CXX="g++ -std=c++17 -O3 -march=native -Wall -Wno-unused-function"
$CXX -DUSE_OPENBLAS $(pkg-config --cflags openblas) gemmbench.cpp -o gb_openblas $(pkg-config --libs openblas)
$CXX -DUSE_BLIS -fopenmp -I/usr/include/x86_64-linux-gnu/blis-openmp gemmbench.cpp -o gb_blis -lblis -lm
$CXX -DUSE_DNNL -fopenmp gemmbench.cpp -o gb_dnnl -ldnnl
$CXX -DUSE_XSMM -fopenmp $(pkg-config --cflags libxsmm) gemmbench.cpp -o gb_xsmm -lxsmm -lxsmmnoblas -lpthread -lrt -ldl -lm
$CXX -DUSE_BW -fopenmp gemmbench.cpp -o gb_bw
echo built
