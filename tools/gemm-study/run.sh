#!/bin/bash
# Re-run everything: ./build.sh && ./run.sh   (results in results/, summary via python3 summarize.py)
cd "$(dirname "$0")"; mkdir -p results; R=results
./gb_bw > $R/bw.txt
for T in 1 2; do
  E="env OMP_NUM_THREADS=$T BLIS_NUM_THREADS=$T OPENBLAS_NUM_THREADS=$T"
  for F in "" "--flush 0 --shapes decode"; do
    tag=$([ -z "$F" ] && echo cold || echo warm)
    $E ./gb_openblas --threads $T $F > $R/openblas_envset_${tag}_t$T.txt 2>&1
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=$T BLIS_NUM_THREADS=$T OPENBLAS_NUM_THREADS=$T ./gb_openblas --threads $T $F > $R/openblas_envunset_${tag}_t$T.txt 2>&1
    $E ./gb_blis --threads $T $F > $R/blis_generic_${tag}_t$T.txt 2>&1
    $E ./gb_blis --threads $T --blis-arch 0 $F > $R/blis_skx_${tag}_t$T.txt 2>&1
    $E ./gb_dnnl --threads $T $F > $R/dnnl_${tag}_t$T.txt 2>&1
    $E ./gb_xsmm --threads $T $F > $R/xsmm_${tag}_t$T.txt 2>&1
  done
done
# 2 threads with spinning OpenMP workers (libgomp): removes the ~8 ms vCPU wake-up seen in this VM
A="env OMP_WAIT_POLICY=ACTIVE OMP_NUM_THREADS=2 BLIS_NUM_THREADS=2"
$A ./gb_bw > $R/bw_active.txt
$A ./gb_dnnl --threads 2 > $R/dnnlactive_cold_t2.txt 2>&1
$A ./gb_xsmm --threads 2 > $R/xsmmactive_cold_t2.txt 2>&1
$A ./gb_blis --threads 2 --blis-arch 0 > $R/blisskxactive_cold_t2.txt 2>&1
echo done
