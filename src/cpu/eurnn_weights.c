/* EURNN's recurrent matrix (docs/models.md §nonlinear-rnns; eurnn_weights_fwd in
 * src/backend_ops.h): the product of L layers of 2 x 2 rotations of disjoint channel pairs, Jing et
 * al. 2017's tunable-space form of capacity L, real-valued.
 *
 * Forward: W = I, then layer by layer W <- R_l W, each pair (p, q = p + 1) of layer l
 * rotating rows p and q: (w_p, w_q) <- (c w_p - s w_q, s w_p + c w_q).
 * Backward, from Y = W and D = dW, layer by layer from the last: the rotated rows' derivatives
 * in their angle are (-y_q, y_p), so dtheta += <d_q, y_p> - <d_p, y_q>; then Y <- R_l^T Y
 * (the layer's input: R_l is orthogonal, nothing is stored) and D <- R_l^T D. */
#include <math.h>
#include <string.h>

#include "cpu/cpu_ops.h"

/* Rotates rows p and p + 1 of X [n, n] by the angle of cosine c and sine s. */
static void rotate_rows(real *X, int n, int p, real c, real s) {
    real *xp = X + (size_t)p * n, *xq = xp + n;
    for (int k = 0; k < n; k++) {
        real a = xp[k], b = xq[k];
        xp[k] = c * a - s * b;
        xq[k] = s * a + c * b;
    }
}

void cpu_eurnn_weights_fwd(void *W_, const void *theta, int n, int L) {
    real *W = W_;
    const real *th = theta;
    memset(W, 0, sizeof(real) * (size_t)n * n);
    for (int i = 0; i < n; i++) W[(size_t)i * n + i] = 1;
    for (int l = 0; l < L; l++) {
        int pairs = eurnn_layer_pairs(n, l);
        for (int m = 0; m < pairs; m++) rotate_rows(W, n, l % 2 + 2 * m, cos(th[m]), sin(th[m]));
        th += pairs;
    }
}

void cpu_eurnn_weights_bwd(void *dtheta, const void *dW, const void *W, const void *theta,
                           void *work, int n, int L) {
    size_t nn = (size_t)n * n;
    real *Y = work, *D = Y + nn;
    memcpy(Y, W, sizeof(real) * nn);
    memcpy(D, dW, sizeof(real) * nn);
    int64_t off = eurnn_angles(n, L);
    for (int l = L - 1; l >= 0; l--) {
        int pairs = eurnn_layer_pairs(n, l);
        off -= pairs;
        const real *th = (const real *)theta + off;
        real *dth = (real *)dtheta + off;
        for (int m = 0; m < pairs; m++) {
            int p = l % 2 + 2 * m;
            const real *yp = Y + (size_t)p * n, *yq = yp + n, *dp = D + (size_t)p * n, *dq = dp + n;
            double g = 0;
            for (int k = 0; k < n; k++) g += (double)dq[k] * yp[k] - (double)dp[k] * yq[k];
            dth[m] += (real)g;
            real c = cos(th[m]), s = sin(th[m]);
            rotate_rows(Y, n, p, c, -s);
            rotate_rows(D, n, p, c, -s);
        }
    }
}
