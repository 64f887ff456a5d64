import { defineStore } from 'pinia'

const KEY = 'weft.token'

function readToken(): string | null {
  try {
    return sessionStorage.getItem(KEY)
  } catch {
    return null
  }
}

// The bearer token, asked for once when the server wants one and kept in
// sessionStorage: it lives as long as the tab and never reaches disk.
export const useAuth = defineStore('auth', {
  state: () => ({ token: readToken() as string | null, needed: false }),
  actions: {
    set(token: string) {
      this.token = token.trim() || null
      this.needed = false
      try {
        if (this.token) sessionStorage.setItem(KEY, this.token)
        else sessionStorage.removeItem(KEY)
      } catch {
        // storage disabled: the token lives in memory only
      }
    },
    require() {
      this.needed = true
    },
    forget() {
      this.set('')
      this.needed = true
    },
  },
})
