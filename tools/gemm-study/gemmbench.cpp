// GEMM study: C[M,N] = A[M,K] * B[N,K]^T (row-major, f32 unless noted).
// One source, built once per backend (-DUSE_OPENBLAS / -DUSE_BLIS / -DUSE_DNNL /
// -DUSE_XSMM / -DUSE_BW) so that BLAS libraries exporting the same symbols
// (cblas_sgemm, sgemm_) never share a process.  See build.sh / run.sh.
//
// Usage: gb_<lib> --threads T [--shapes all|decode] [--shape M,N,K]... [--flush 0|1] [--mintime S]
// Output: one "RES" line per (variant, shape):
//   RES lib variant T M N K gflops median_ms min_ms Bbytes weightGBps reps deterministic hash maxrelerr
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>
#include <immintrin.h>

#ifdef USE_OPENBLAS
#include <cblas.h>
#endif
#ifdef USE_BLIS
#include <blis.h>
#endif
#ifdef USE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>
#endif
#ifdef USE_XSMM
#include <libxsmm.h>
#include <omp.h>
#endif
#ifdef USE_BW
#include <omp.h>
#endif

struct Shape { long M, N, K; };
static const std::vector<Shape> kAllShapes = {
    {1, 5760, 2880},   {8, 5760, 2880},   {64, 5760, 2880}, {128, 5760, 2880},
    {512, 5760, 2880}, {2048, 5760, 2880}, {64, 2880, 2880}, {512, 2880, 2880},
    {512, 1536, 2048}, {512, 2048, 768},  {32, 1536, 2048}};
static const std::vector<Shape> kDecodeShapes = {{1, 5760, 2880}, {8, 5760, 2880}};

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class T> static T* aalloc(size_t n) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, n * sizeof(T) + 64)) abort();
  return (T*)p;
}

static uint64_t fnv(const void* p, size_t n) {
  const unsigned char* b = (const unsigned char*)p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ull; }
  return h;
}

static uint16_t f2bf(float f) {  // round-to-nearest-even
  uint32_t u; memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}
static float bf2f(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }

// cache flush: read a 128 MiB buffer (4x L3) so B comes from DRAM each rep
static std::vector<char> g_flush;
static volatile long g_sink;
static void flush_caches() {
  // read-only after first touch, so no dirty lines are written back during the timed GEMM
  if (g_flush.empty()) { g_flush.resize(128ul << 20); for (size_t i = 0; i < g_flush.size(); i++) g_flush[i] = (char)i; }
  long s = 0;
  const long* p = (const long*)g_flush.data();
  for (size_t i = 0; i < g_flush.size() / 8; i += 8) s += p[i];
  g_sink = s;
}

struct Opts { int threads = 1; bool flush = true; double mintime = 0.3; bool decode_only = false; };
static Opts g_opt;
static std::vector<Shape> g_custom;  // --shape M,N,K (repeatable) overrides the list

struct Data {
  Shape s;
  float *A, *B, *Bt, *C;     // A[M,K], B[N,K], Bt[K,N] (pre-transposed weights), C[M,N]
  uint16_t *Abf, *Bbf;       // bf16 copies
};

static void fill(float* p, size_t n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    p[i] = (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
}

static Data make_data(Shape s) {
  Data d; d.s = s;
  size_t MK = s.M * s.K, NK = s.N * s.K, MN = s.M * s.N;
  d.A = aalloc<float>(MK); d.B = aalloc<float>(NK); d.Bt = aalloc<float>(NK); d.C = aalloc<float>(MN);
  d.Abf = aalloc<uint16_t>(MK); d.Bbf = aalloc<uint16_t>(NK);
  fill(d.A, MK, 1); fill(d.B, NK, 2);
  for (long n = 0; n < s.N; n++)
    for (long k = 0; k < s.K; k++) d.Bt[k * s.N + n] = d.B[n * s.K + k];
  for (size_t i = 0; i < MK; i++) d.Abf[i] = f2bf(d.A[i]);
  for (size_t i = 0; i < NK; i++) d.Bbf[i] = f2bf(d.B[i]);
  return d;
}
static void free_data(Data& d) { free(d.A); free(d.B); free(d.Bt); free(d.C); free(d.Abf); free(d.Bbf); }

// max |c - ref| / sum_k |a||b| over sampled entries; ref uses f32 inputs in double.
static double check(const Data& d) {
  const Shape& s = d.s; double worst = 0;
  uint64_t x = 12345;
  for (int t = 0; t < 64; t++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    long i = (x >> 33) % s.M, j = (x >> 13) % s.N;
    double ref = 0, mag = 0;
    for (long k = 0; k < s.K; k++) { double p = (double)d.A[i * s.K + k] * d.B[j * s.K + k]; ref += p; mag += fabs(p); }
    double c = d.C[i * s.N + j];
    double e = std::isfinite(c) ? fabs(c - ref) / (mag + 1e-30) : 1e30;
    worst = std::max(worst, e);
  }
  return worst;
}

// time fn; returns after printing RES line
static void bench(const char* lib, const std::string& variant, Data& d, double bbytes,
                  const std::function<void()>& fn) {
  const Shape& s = d.s; size_t MN = s.M * s.N;
  for (size_t i = 0; i < MN; i++) d.C[i] = NAN;
  double t0 = now(); fn(); double tw = now() - t0;   // warm-up 1
  fn();                                              // warm-up 2
  int reps = (int)std::min(40.0, std::max(7.0, std::ceil(g_opt.mintime / std::max(tw, 1e-6))));
  std::vector<double> ts;
  std::vector<float> first(d.C, d.C + MN);
  bool det = true;
  for (int r = 0; r < reps; r++) {
    if (g_opt.flush) flush_caches();
    double a = now(); fn(); double b = now();
    ts.push_back(b - a);
    if (memcmp(first.data(), d.C, MN * 4) != 0) det = false;
  }
  std::sort(ts.begin(), ts.end());
  double med = ts[ts.size() / 2];
  double gf = 2.0 * s.M * s.N * s.K / med * 1e-9;
  double err = check(d);
  printf("RES %s %s %d %ld %ld %ld %.2f %.4f %.4f %.0f %.2f %d %s %016llx %.2e\n", lib, variant.c_str(),
         g_opt.threads, s.M, s.N, s.K, gf, med * 1e3, ts[0] * 1e3, bbytes, bbytes / med * 1e-9, reps,
         det ? "det" : "NONDET", (unsigned long long)fnv(d.C, MN * 4), err);
  fflush(stdout);
}

#ifdef USE_DNNL
using namespace dnnl;
static void run_dnnl_matmul(engine& eng, stream& st, Data& d, memory::data_type dt, bool any) {
  const Shape& s = d.s;
  memory::desc a_md({s.M, s.K}, dt, memory::format_tag::ab);
  memory::desc bplain_md({s.K, s.N}, dt, memory::format_tag::ba);   // == our [N,K] row-major weights
  memory::desc b_md = any ? memory::desc({s.K, s.N}, dt, memory::format_tag::any) : bplain_md;
  memory::desc c_md({s.M, s.N}, memory::data_type::f32, memory::format_tag::ab);
  matmul::desc md(a_md, b_md, c_md);
  double tc0 = now();
  matmul::primitive_desc pd(md, eng);
  matmul prim(pd);
  double tcreate = now() - tc0;
  void* aptr = dt == memory::data_type::f32 ? (void*)d.A : (void*)d.Abf;
  void* bptr = dt == memory::data_type::f32 ? (void*)d.B : (void*)d.Bbf;
  memory A(a_md, eng, aptr), Bp(bplain_md, eng, bptr), C(c_md, eng, d.C);
  memory Bw = Bp;
  double treorder = 0;
  bool reordered = pd.weights_desc() != bplain_md;
  if (reordered) {
    Bw = memory(pd.weights_desc(), eng);
    reorder ro(Bp, Bw);
    ro.execute(st, Bp, Bw); st.wait();   // first (incl. warm-up)
    double r0 = now(); ro.execute(st, Bp, Bw); st.wait(); treorder = now() - r0;
  }
  std::string variant = std::string("matmul_") + (dt == memory::data_type::f32 ? "f32" : "bf16") +
                        (any ? "_Bany" : "_Bba");
  fprintf(stderr, "INFO dnnl %s T=%d M=%ld N=%ld K=%ld impl=%s create_ms=%.2f Breordered=%d Breorder_ms=%.2f wbytes=%zu\n",
          variant.c_str(), g_opt.threads, s.M, s.N, s.K, pd.impl_info_str(), tcreate * 1e3, (int)reordered,
          treorder * 1e3, pd.weights_desc().get_size());
  if (reordered) printf("REORDER %s %d %ld %ld %ld %.3f\n", variant.c_str(), g_opt.threads, s.M, s.N, s.K, treorder * 1e3);
  double bbytes = (double)s.N * s.K * (dt == memory::data_type::f32 ? 4 : 2);
  bench("onednn", variant, d, bbytes, [&] {
    prim.execute(st, {{DNNL_ARG_SRC, A}, {DNNL_ARG_WEIGHTS, Bw}, {DNNL_ARG_DST, C}});
    st.wait();
  });
  if (dt == memory::data_type::bf16) {  // cost of converting activations f32 -> bf16 (reorder)
    memory::desc af_md({s.M, s.K}, memory::data_type::f32, memory::format_tag::ab);
    memory Af(af_md, eng, d.A), Ab(a_md, eng);
    reorder ro(Af, Ab);
    ro.execute(st, Af, Ab); st.wait();
    int n = 20; double r0 = now();
    for (int i = 0; i < n; i++) ro.execute(st, Af, Ab);
    st.wait();
    if (!any) printf("ACONV %d %ld %ld %.4f\n", g_opt.threads, s.M, s.K, (now() - r0) / n * 1e3);
  }
}
#endif

#ifdef USE_XSMM
// (a) direct single-kernel dispatch of the whole problem (column-major view, pre-transposed B):
//     C^T[N,M] = Bt^T[N,K] * A^T[K,M]  with m=N, n=M, k=K, lda=N, ldb=K, ldc=N.
// (b) blocked: m-block 64 (N dim), n-block min(M,64) (M dim), K via batch-reduce strided kernel,
//     OpenMP over N-blocks.  Weights Bt[K,N] (= "ba" layout, transposed once at load).
static void xsmm_run(Data& d) {
  const Shape& s = d.s;
  const float alpha = 1.f, beta = 0.f;
  const int flags = LIBXSMM_GEMM_FLAG_NONE;
  libxsmm_blasint m = s.N, n = s.M, k = s.K, lda = s.N, ldb = s.K, ldc = s.N;
  double t0 = now();
  libxsmm_smmfunction direct = libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, nullptr);
  fprintf(stderr, "INFO xsmm direct dispatch M=%ld N=%ld K=%ld -> %s (%.2f ms)\n", s.M, s.N, s.K,
          direct ? "kernel" : "NULL", (now() - t0) * 1e3);
  double bbytes = (double)s.N * s.K * 4;
  if (direct && g_opt.threads == 1)
    bench("libxsmm", "direct", d, bbytes, [&] { direct(d.Bt, d.A, d.C); });
  else if (!direct && g_opt.threads == 1)
    printf("RES libxsmm direct %d %ld %ld %ld unsupported\n", g_opt.threads, s.M, s.N, s.K);

  const long NB = 64, MB = std::min<long>(s.M, 64);
  long KB = 64;
  for (long c : {256, 192, 160, 128, 96, 64}) if (s.K % c == 0) { KB = c; break; }
  if (s.N % NB || s.M % MB || s.K % KB) { fprintf(stderr, "xsmm blocked: shape not divisible\n"); return; }
  libxsmm_blasint bm = NB, bn = MB, bk = KB;
  libxsmm_smmfunction_reducebatch_strd kern = libxsmm_smmdispatch_reducebatch_strd(
      bm, bn, bk, (libxsmm_blasint)(KB * s.N * sizeof(float)), (libxsmm_blasint)(KB * sizeof(float)),
      &lda, &ldb, &ldc, &alpha, &beta, &flags, nullptr);
  if (!kern) { printf("RES libxsmm blocked %d %ld %ld %ld unsupported\n", g_opt.threads, s.M, s.N, s.K); return; }
  const unsigned long long cnt = s.K / KB;
  const long nbN = s.N / NB, nbM = s.M / MB;
  const int T = g_opt.threads;
  bench("libxsmm", "blocked", d, bbytes, [&] {
#pragma omp parallel for num_threads(T) schedule(static)
    for (long jb = 0; jb < nbN; jb++)
      for (long ib = 0; ib < nbM; ib++)
        kern(d.Bt + jb * NB, d.A + ib * MB * s.K, d.C + ib * MB * s.N + jb * NB, &cnt);
  });
}
#endif

#ifdef USE_BW
// streaming read bandwidth over 1 GiB: AVX-512 loads, 8 accumulators, OpenMP static split.
static void bw_bench() {
  const size_t bytes = 1ul << 30, n = bytes / 4;
  float* buf = aalloc<float>(n);
#pragma omp parallel for num_threads(2) schedule(static)
  for (size_t i = 0; i < n; i++) buf[i] = (float)(i & 1023) * 1e-3f;
  for (int T : {1, 2}) {
    std::vector<double> ts; double tot = 0;
    for (int r = 0; r < 7; r++) {
      double t0 = now();
#pragma omp parallel num_threads(T) reduction(+ : tot)
      {
        int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        size_t chunk = n / nt, lo = tid * chunk, hi = lo + chunk;
        __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
        for (size_t i = lo; i < hi; i += 128) {
          s0 = _mm512_add_ps(s0, _mm512_load_ps(buf + i));
          s1 = _mm512_add_ps(s1, _mm512_load_ps(buf + i + 16));
          s2 = _mm512_add_ps(s2, _mm512_load_ps(buf + i + 32));
          s3 = _mm512_add_ps(s3, _mm512_load_ps(buf + i + 48));
          s4 = _mm512_add_ps(s4, _mm512_load_ps(buf + i + 64));
          s5 = _mm512_add_ps(s5, _mm512_load_ps(buf + i + 80));
          s6 = _mm512_add_ps(s6, _mm512_load_ps(buf + i + 96));
          s7 = _mm512_add_ps(s7, _mm512_load_ps(buf + i + 112));
        }
        s0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)),
                           _mm512_add_ps(_mm512_add_ps(s4, s5), _mm512_add_ps(s6, s7)));
        tot += _mm512_reduce_add_ps(s0);
      }
      ts.push_back(now() - t0);
    }
    std::sort(ts.begin(), ts.end());
    printf("BW threads=%d median_GBps=%.2f best_GBps=%.2f (sum=%g)\n", T, bytes / ts[3] * 1e-9,
           bytes / ts[0] * 1e-9, tot);
  }
  free(buf);
}
#endif

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--threads") g_opt.threads = atoi(argv[++i]);
    else if (a == "--blis-arch") i++;
    else if (a == "--flush") g_opt.flush = atoi(argv[++i]) != 0;
    else if (a == "--mintime") g_opt.mintime = atof(argv[++i]);
    else if (a == "--shapes") g_opt.decode_only = std::string(argv[++i]) == "decode";
    else if (a == "--shape") { Shape s; sscanf(argv[++i], "%ld,%ld,%ld", &s.M, &s.N, &s.K); g_custom.push_back(s); }
  }
  const int T = g_opt.threads;
#ifdef USE_BLIS
  // BLIS 0.9.0 does not know AMD family 0x1A (Zen 5) and falls back to 'generic'.  BLIS reads
  // BLIS_ARCH_TYPE (numeric arch_t id; 0 = skx) at its lazy init, so setenv() before the first
  // BLIS call works in-process: --blis-arch 0
  for (int i = 1; i < argc; i++)
    if (std::string(argv[i]) == "--blis-arch") setenv("BLIS_ARCH_TYPE", argv[i + 1], 1);
#endif
#ifdef USE_BW
  bw_bench();
  return 0;
#endif
  const std::vector<Shape>& shapes = !g_custom.empty() ? g_custom : g_opt.decode_only ? kDecodeShapes : kAllShapes;
  printf("# threads=%d flush=%d\n", T, (int)g_opt.flush);

#ifdef USE_OPENBLAS
  openblas_set_num_threads(T);
  printf("# openblas config='%s' corename='%s' num_threads=%d env CORETYPE=%s L2_SIZE=%s\n", openblas_get_config(),
         openblas_get_corename(), openblas_get_num_threads(), getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)",
         getenv("OPENBLAS_L2_SIZE") ? getenv("OPENBLAS_L2_SIZE") : "(unset)");
  std::string tag = getenv("OPENBLAS_CORETYPE") ? "sgemm_envset" : "sgemm_envunset";
  for (Shape s : shapes) {
    Data d = make_data(s);
    bench("openblas", tag, d, (double)s.N * s.K * 4, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s.M, s.N, s.K, 1.f, d.A, s.K, d.B, s.K, 0.f, d.C, s.N);
    });
    free_data(d);
  }
#endif
#ifdef USE_BLIS
  bli_thread_set_num_threads(T);
  printf("# blis version=%s arch=%s num_threads=%ld\n", bli_info_get_version_str(), bli_arch_string(bli_arch_query_id()),
         (long)bli_thread_get_num_threads());
  for (Shape s : shapes) {
    Data d = make_data(s);
    float one = 1.f, zero = 0.f;
    bench("blis", std::string("bli_sgemm_") + bli_arch_string(bli_arch_query_id()), d, (double)s.N * s.K * 4, [&] {
      bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_TRANSPOSE, s.M, s.N, s.K, &one, d.A, s.K, 1, d.B, s.K, 1, &zero, d.C, s.N, 1);
    });
    free_data(d);
  }
#endif
#ifdef USE_DNNL
  omp_set_num_threads(T);
  {
    const dnnl_version_t* v = dnnl_version();
    printf("# onednn %d.%d.%d cpu_runtime=%d (OMP=%d) omp_max_threads=%d isa=%d\n", v->major, v->minor, v->patch,
           v->cpu_runtime, DNNL_RUNTIME_OMP, omp_get_max_threads(), (int)dnnl::get_effective_cpu_isa());
  }
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  for (Shape s : shapes) {
    Data d = make_data(s);
    bench("onednn", "dnnl_sgemm", d, (double)s.N * s.K * 4, [&] {
      dnnl_sgemm('N', 'T', s.M, s.N, s.K, 1.f, d.A, s.K, d.B, s.K, 0.f, d.C, s.N);
    });
    run_dnnl_matmul(eng, st, d, memory::data_type::f32, false);
    run_dnnl_matmul(eng, st, d, memory::data_type::f32, true);
    run_dnnl_matmul(eng, st, d, memory::data_type::bf16, false);
    run_dnnl_matmul(eng, st, d, memory::data_type::bf16, true);
    free_data(d);
  }
#endif
#ifdef USE_XSMM
  libxsmm_init();
  printf("# libxsmm %s target_arch=%s\n", LIBXSMM_VERSION, libxsmm_get_target_arch());
  for (Shape s : shapes) {
    Data d = make_data(s);
    xsmm_run(d);
    free_data(d);
  }
  libxsmm_finalize();
#endif
  return 0;
}
