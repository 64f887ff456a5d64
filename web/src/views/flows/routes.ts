import type { RouteRecordRaw } from 'vue-router'

// The Flows view (seed 001's canvas) owns this folder: its routes are
// declared here so it can grow (list, builder, run panel) without touching
// the app's router.
export const flowsRoutes: RouteRecordRaw[] = [
  { path: '/flows/:pathMatch(.*)*', name: 'flows', component: () => import('./FlowsView.vue') },
]
