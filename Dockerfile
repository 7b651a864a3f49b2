# The reference CTF server. Build: docker build -t graphql-atomic-rate-limit .
FROM node:20-alpine AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY server/package.json ./server/
RUN npm ci --ignore-scripts
COPY tsconfig.json ./
COPY src ./src
RUN npm run build

# At run time only what the server needs: the lock's packages less every devDependency. The
# server's own (Apollo Server, express, prom-client) are the dependencies of the `server`
# workspace, so the library's consumers never get them. test/runtime-image.test.ts installs and
# starts this stage without Docker.
FROM node:20-alpine
WORKDIR /app
ENV NODE_ENV=production
# The server listens on loopback by default; in a container that would reach nothing.
ENV HOST=0.0.0.0
COPY package.json package-lock.json ./
COPY server/package.json ./server/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY lua ./lua
COPY schema ./schema
COPY data ./data
COPY public ./public
USER node
EXPOSE 4000
CMD ["node", "dist/server/main.js"]
