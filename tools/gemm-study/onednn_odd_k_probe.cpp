// Which bf16 matmuls of Debian 12's oneDNN (2.6.3) die on this host: every (M, K, N) of a grid is
// created with the weights in the library's blocked layout (as the cpu backend's prepared weights
// are) and run once in a child process; a child killed by a signal is a crash. Prints the crashes
// and a count of the AMX primitives that ran and that crashed, by the parity of K
// (docs/cpu-backend.md: why bf16 GEMMs with an odd K take the f32 path).
//   g++ -std=c++17 -O1 onednn_odd_k_probe.cpp -o onednn_odd_k_probe -ldnnl && OMP_NUM_THREADS=2 ./onednn_odd_k_probe
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

using namespace dnnl;
using dims = memory::dims;

// 0: ran on other kernels; 1: ran on AMX; -signal: the child died.
int probe(int M, int K, int N) {
    const pid_t pid = fork();
    if (pid == 0) {
        engine eng(engine::kind::cpu, 0);
        stream s(eng);
        const memory::desc a_md(dims{M, K}, memory::data_type::bf16, memory::format_tag::ab);
        const memory::desc c_md(dims{M, N}, memory::data_type::f32, memory::format_tag::ab);
        // The blocked layout the library picks for these weights (any M gives it).
        const memory::desc any(dims{K, N}, memory::data_type::bf16, memory::format_tag::any);
        const memory::desc a64(dims{64, K}, memory::data_type::bf16, memory::format_tag::ab);
        const memory::desc c64(dims{64, N}, memory::data_type::f32, memory::format_tag::ab);
        const memory::desc w_md = matmul::primitive_desc(matmul::desc(a64, any, c64), eng).weights_desc();
        const matmul::primitive_desc pd(matmul::desc(a_md, w_md, c_md), eng);
        std::vector<std::uint16_t> a(std::size_t(M) * K, 0x3f80), w(w_md.get_size() / 2 + 64, 0x3f80);  // 1.0
        std::vector<float> c(std::size_t(M) * N);
        memory am(a_md, eng, a.data()), wm(w_md, eng, w.data()), cm(c_md, eng, c.data());
        matmul(pd).execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, cm}});
        s.wait();
        _exit(std::string(pd.impl_info_str()).find("amx") != std::string::npos ? 1 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) ? -WTERMSIG(status) : WEXITSTATUS(status);
}

int main() {
    int ran[2] = {0, 0}, crashed[2] = {0, 0};  // AMX primitives, [K even, K odd]
    for (int K : {31, 32, 62, 63, 64, 65, 127, 128})
        for (int M = 1; M <= 40; ++M)
            for (int N : {16, 33, 48, 63, 64, 65, 96, 128, 144, 176, 200}) {
                const int r = probe(M, K, N);
                if (r < 0) {
                    ++crashed[K % 2];
                    std::printf("signal %d: M %d K %d N %d\n", -r, M, K, N);
                } else if (r == 1) {
                    ++ran[K % 2];
                }
            }
    std::printf("AMX primitives that ran: %d with even K, %d with odd K; crashes: %d with even K, %d with odd K\n",
                ran[0], ran[1], crashed[0], crashed[1]);
}
