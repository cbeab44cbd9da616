/* A mixer's input projections as one matmul_group (model_internal.h InProj). */
#include "model/model_internal.h"
#include "util/error.h"

void inproj_add(InProj *ip, int w, int b, int64_t N, void **y, void **dy) {
    RT_ASSERT(ip->n < MATMUL_GROUP_MAX && w >= 0);
    ip->p[ip->n++] = (InProjPart){.w = w, .b = b, .N = (int)N, .y = y, .dy = dy};
}

static MatmulGroup group_of(const InProj *ip, const Ctx *c, const void *x) {
    MatmulGroup g = {.x = x, .M = (int)c->N, .K = c->cfg->hidden_size, .n = ip->n};
    for (int i = 0; i < ip->n; i++) {
        const InProjPart *p = &ip->p[i];
        g.p[i] = (MatmulPart){
            .w = W(c, p->w), .bias = p->b >= 0 ? W(c, p->b) : NULL, .y = *p->y, .N = p->N};
    }
    return g;
}

void inproj_forward(const InProj *ip, const Ctx *c, const void *x) {
    MatmulGroup g = group_of(ip, c, x);
    c->be->matmul_group_fwd(&g);
}

void inproj_backward(const InProj *ip, const Ctx *c, const void *x, void *dx, int accumulate) {
    MatmulGroupGrads a = {.g = group_of(ip, c, x), .dx = dx, .accumulate = accumulate};
    for (int i = 0; i < ip->n; i++) {
        const InProjPart *p = &ip->p[i];
        a.dy[i] = *p->dy;
        a.dw[i] = G(c, p->w);
        a.dbias[i] = p->b >= 0 ? G(c, p->b) : NULL;
    }
    c->be->matmul_group_bwd(&a);
}
