# syntax=docker/dockerfile:1
# Build stage: compile TypeScript, then drop dev dependencies.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY migrations ./migrations
COPY lua ./lua
COPY examples ./examples
COPY queue-page ./queue-page
RUN npm run build && npm prune --omit=dev

# Runtime stage: compiled output and production dependencies only, as the unprivileged node user.
FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
USER node
EXPOSE 3000
ENTRYPOINT ["node", "dist/src/cli.js"]
CMD ["serve"]
