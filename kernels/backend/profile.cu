// The op profiler's records (profile.cuh): two events per call on the compute stream, read
// back and summed per op and shape by cuda_profile_read.
#include <stdio.h>
#include <string.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "backend/profile.cuh"
#include "lib/cuda_common.cuh"

namespace {

struct Call {
    int row;
    cudaEvent_t begin, end;
};

std::vector<std::string> op_names;
std::vector<OpTime> rows;
std::unordered_map<std::string, int> row_of; // "op/shape" -> index into rows
std::vector<Call> calls;                     // this profile's calls, in order
std::vector<cudaEvent_t> spare;              // events of earlier profiles, for reuse

cudaEvent_t event() {
    cudaEvent_t e;
    if (!spare.empty()) {
        e = spare.back();
        spare.pop_back();
    } else {
        CUDA_CHECK(cudaEventCreate(&e));
    }
    return e;
}

} // namespace

int prof_op_id(const char *op) {
    op_names.push_back(op);
    return (int)op_names.size() - 1;
}

int prof_begin(int id, const OpCost &c) {
    std::string key = op_names[id] + "/" + c.shape;
    auto it = row_of.find(key);
    int r;
    if (it == row_of.end()) {
        OpTime row{};
        snprintf(row.op, sizeof row.op, "%s", op_names[id].c_str());
        snprintf(row.shape, sizeof row.shape, "%s", c.shape);
        rows.push_back(row);
        r = (int)rows.size() - 1;
        row_of.emplace(key, r);
    } else {
        r = it->second;
    }
    rows[r].calls++;
    rows[r].flops += c.flops;
    rows[r].bytes += c.bytes;
    Call call{r, event(), event()};
    CUDA_CHECK(cudaEventRecord(call.begin, cuda_stream()));
    calls.push_back(call);
    return (int)calls.size() - 1;
}

void prof_end(int rec) { CUDA_CHECK(cudaEventRecord(calls[rec].end, cuda_stream())); }

int cuda_profile_read(OpTime *out, int max) {
    CUDA_CHECK(cudaStreamSynchronize(cuda_stream()));
    for (const Call &c : calls) {
        float ms = 0.f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, c.begin, c.end));
        rows[c.row].ms += ms;
        spare.push_back(c.begin);
        spare.push_back(c.end);
    }
    calls.clear();
    int n = (int)rows.size();
    for (int i = 0; i < n && i < max; i++) out[i] = rows[i];
    rows.clear();
    row_of.clear();
    return n;
}
