import { createRouter, createWebHistory, type RouteRecordRaw } from 'vue-router'
import { flowsRoutes } from './views/flows/routes'

// Every view is its own chunk, loaded when first opened, so that the first
// load carries only the shell and the view it lands on. The Flows view's
// routes live in views/flows/routes.ts, owned by that view.
export const routes: RouteRecordRaw[] = [
  { path: '/', redirect: '/chat' },
  { path: '/chat/:id?', name: 'chat', component: () => import('./views/chat/ChatView.vue') },
  { path: '/runs/:id?', name: 'runs', component: () => import('./views/runs/RunsView.vue') },
  ...flowsRoutes,
  { path: '/tasks', name: 'tasks', component: () => import('./views/tasks/TasksView.vue') },
  { path: '/settings', name: 'settings', component: () => import('./views/settings/SettingsView.vue') },
  { path: '/audit', name: 'audit', component: () => import('./views/audit/AuditView.vue') },
  { path: '/:pathMatch(.*)*', redirect: '/chat' },
]

export const router = createRouter({ history: createWebHistory(), routes })
